/**
 * Consumer-side validation in native worker threads: a handler module defined with `defineHandler` carries
 * its schema, and with `validateOnConsume` on its threads check each event against it before the handler
 * runs, as the bus does for handler functions: an event that does not match is dead-lettered with a
 * ValidationError and the handler never sees it. A versioned type's older events are upcast there whatever
 * `validateOnConsume` says. A plain handler function cannot be checked, and the bus says so.
 */
import { BroadcastChannel } from 'node:worker_threads';
import { describe, expect, it } from 'vitest';
import { ConfigError } from '../../src/index.js';
import { uniqueName, waitFor } from '../helpers/wait.js';
import { errorLog, fixture, nativeBuses, transportOf } from './harness.js';

/** The seqs a worker handler posted on a fresh BroadcastChannel, and its name for workerData. */
function listen(): { name: string; seen: number[]; close: () => void } {
  const name = uniqueName('checked');
  const seen: number[] = [];
  const ch = new BroadcastChannel(name);
  ch.onmessage = (m) => void seen.push((m as { data: number }).data);
  return { name, seen, close: () => ch.close() };
}

describe.each(['native', 'js'] as const)('native worker validation (%s)', (implementation) => {
  const bus = nativeBuses(implementation, 'worker-validation');

  it('an event that does not match the schema of a defineHandler module is dead-lettered, never handled', async () => {
    const name = uniqueName('wv');
    const b = await bus({ name, partitions: 2 });
    const ch = listen();
    try {
      await b.subscribe('tick', { group: 'g', workers: 2, handler: fixture('checked-handler.ts'), workerData: { channel: ch.name } });
      // The publisher's schema allows any int; the handler module's allows at most 100.
      await b.publishMany('tick', [{ seq: 1 }, { seq: 500 }, { seq: 2 }]);
      await waitFor(async () => ch.seen.length === 2 && (await b.deadLetters('tick')).length === 1, 10_000, 'two handled, one dead-lettered');
      expect(ch.seen.sort()).toEqual([1, 2]);
      const [dl] = await transportOf(b).deadLetters('tick', 'g');
      expect(dl!.attempts).toBe(1);
      expect(dl!.error).toMatch(/^ValidationError: Event .* of "tick" does not match its schema/);
    } finally {
      ch.close();
    }
  });

  it('with validateOnConsume off the same module gets every event', async () => {
    const b = await bus({ partitions: 2 }, { validateOnConsume: false });
    const ch = listen();
    try {
      await b.subscribe('tick', { group: 'g', workers: 1, handler: fixture('checked-handler.ts'), workerData: { channel: ch.name } });
      await b.publishMany('tick', [{ seq: 1 }, { seq: 500 }]);
      await waitFor(() => ch.seen.length === 2, 10_000, 'both handled');
      expect(await b.deadLetters('tick')).toEqual([]);
    } finally {
      ch.close();
    }
  });

  it('a defineHandler module of a versioned type gets older versions upcast, with validateOnConsume off too', async () => {
    const b = await bus({ partitions: 2 }, { validateOnConsume: false });
    const ch = listen();
    try {
      await b.subscribe('tick', { group: 'g', workers: 1, handler: fixture('versioned-handler.ts'), workerData: { channel: ch.name } });
      // This bus publishes `tick` as version 1 (a plain schema); the module knows versions 1..2.
      await b.publishMany('tick', [{ seq: 1 }, { seq: 2 }]);
      await waitFor(() => ch.seen.length === 2, 10_000, 'both handled');
      expect(ch.seen.sort()).toEqual([2, 4]);
      expect(await b.deadLetters('tick')).toEqual([]);
    } finally {
      ch.close();
    }
  });

  it('a module defined for another event type is a ConfigError at subscribe naming both types', async () => {
    const b = await bus();
    const err = await b.subscribe('tick', { group: 'g', workers: 1, handler: fixture('wrong-type-handler.ts') }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ConfigError);
    expect((err as Error).message).toMatch(/handles "tock" \(defineHandler\), but it is subscribed to "tick"/);
  });

  it('a plain handler function cannot be checked: one warning says so and how to fix it', async () => {
    const warnings: string[] = [];
    const { logger } = errorLog();
    const recording = { ...logger, warn: (_: object, msg: string) => void warnings.push(msg), child: () => recording };
    const b = await bus({}, { logger: recording });
    const shared = new SharedArrayBuffer(12);
    await b.subscribe('tick', { group: 'g', workers: 2, handler: fixture('count-handler.mjs'), workerData: { counters: shared } });
    await b.publish('tick', { seq: 1 });
    await waitFor(() => Atomics.load(new Int32Array(shared), 0) === 1, 10_000, 'handled');
    expect(warnings.filter((w) => w.includes('defineHandler'))).toHaveLength(1);
  });
});
