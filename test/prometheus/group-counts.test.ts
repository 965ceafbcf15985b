/**
 * `bus.groupCounts()` on the in-process transports: a backlog published with no consumer running is lag, in
 * events; what handlers hold is pending; both are 0 once the group has finished.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { ConfigError, createEventBus, defineEvents, UnknownEventError, type EventBus } from '../../src/index.js';
import { waitFor } from '../helpers/wait.js';

const events = defineEvents({ tick: z.object({ seq: z.number().int() }) });
const N = 500;
const payloads = Array.from({ length: N }, (_, seq) => ({ seq }));
const buses: EventBus<typeof events>[] = [];

afterEach(async () => {
  await Promise.all(buses.splice(0).map((b) => b.close()));
});

async function bus(transport: Record<string, unknown>): Promise<EventBus<typeof events>> {
  const b = await createEventBus({ service: 'counts', events, transport: transport as { type: 'memory' }, logger: false });
  buses.push(b);
  return b;
}

/** A handler that holds every event until `open()`. */
function gate(): { handler: () => Promise<void>; started: () => number; open: () => void } {
  let release!: () => void;
  const opened = new Promise<void>((resolve) => (release = resolve));
  let started = 0;
  return {
    handler: async () => {
      started++;
      await opened;
    },
    started: () => started,
    open: () => release(),
  };
}

describe('bus.groupCounts() on memory', () => {
  it('counts a backlog as lag, held events as pending, and 0 once finished', async () => {
    const b = await bus({ type: 'memory', partitions: 2 });
    // The group exists, and no member consumes it.
    await (await b.subscribe('tick', { group: 'g' }, () => {})).close();
    await b.publishMany('tick', payloads);
    expect(await b.groupCounts({ groups: [{ type: 'tick', group: 'g' }] })).toEqual([{ type: 'tick', group: 'g', lagEvents: N, pendingEvents: 0 }]);

    const g = gate();
    await b.subscribe('tick', { group: 'g', concurrency: 8 }, g.handler);
    await waitFor(async () => g.started() === 8, 5000, 'eight handlers holding their events');
    expect(await b.groupCounts()).toEqual([{ type: 'tick', group: 'g', lagEvents: N - 8, pendingEvents: 8 }]);
    g.open();
    await b.idle();
    expect(await b.groupCounts()).toEqual([{ type: 'tick', group: 'g', lagEvents: 0, pendingEvents: 0 }]);
  });

  it('names each subscribed group once; a bad groups option is a ConfigError, an unknown type UnknownEventError', async () => {
    const b = await bus({ type: 'memory' });
    await b.subscribe('tick', { group: 'a' }, () => {});
    await b.subscribe('tick', { group: 'a' }, () => {});
    await b.subscribe('tick', { group: 'b' }, () => {});
    const counts = await b.groupCounts({
      groups: [
        { type: 'tick', group: 'a' },
        { type: 'tick', group: 'never' },
      ],
    });
    expect(counts.map((c) => c.group)).toEqual(['a', 'b', 'never']);
    await expect(b.groupCounts({ groups: 'a' as never })).rejects.toBeInstanceOf(ConfigError);
    await expect(b.groupCounts({ groups: [{ type: 'tick', group: '' }] })).rejects.toBeInstanceOf(ConfigError);
    await expect(b.groupCounts({ groups: [{ type: 'nope' as 'tick', group: 'a' }] })).rejects.toBeInstanceOf(UnknownEventError);
  });
});
