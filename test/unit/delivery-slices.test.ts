/**
 * Main-thread consumers of the in-process transports (memory, native on both cores) deliver a backlog in
 * slices with event-loop turns between them, async handlers included: each settle pumps again in a
 * microtask, and a slice per pump never ran out, so the whole backlog ran without a turn.
 */
import { describe, expect, it } from 'vitest';
import { createEventBus } from '../../src/index.js';
import { events, ticks } from '../native/harness.js';
import { uniqueName, waitFor } from '../helpers/wait.js';

function busyFor(us: number): void {
  const end = performance.now() + us / 1000;
  while (performance.now() < end);
}

const transports = [
  ['memory', { type: 'memory' }],
  ['native (addon)', { type: 'native', implementation: 'native' }],
  ['native (js core)', { type: 'native', implementation: 'js' }],
] as const;

describe.each(transports)('delivery slices on %s', (_name, transport) => {
  it.each([
    ['an async handler', true],
    ['a sync handler', false],
  ])('a backlog handled by %s lets the event loop turn every few ms', async (_h, isAsync) => {
    const bus = await createEventBus({ service: 'slices', events, transport: { ...transport, name: uniqueName('slices') } as never });
    try {
      let handled = 0;
      const work = (): void => {
        busyFor(50);
        handled++;
      };
      await bus.subscribe('tick', { group: 'g', concurrency: 4 }, isAsync ? async () => work() : work);
      // Event-loop turns while 4,000 events of ~50 us each (200 ms or more) are handled.
      let turns = 0;
      let stop = false;
      const spin = (): void => {
        turns++;
        if (!stop) setImmediate(spin);
      };
      await bus.publishMany('tick', ticks(4000));
      setImmediate(spin);
      await waitFor(() => handled === 4000, 20_000, 'the backlog');
      stop = true;
      // Slices of 5 ms: about 40 turns, with async handlers too (never the whole backlog in one turn).
      expect(turns).toBeGreaterThanOrEqual(10);
    } finally {
      await bus.close();
    }
  });
});
