/**
 * `bus.groupCounts()` on the in-process transports: a backlog published with no consumer running is lag, in
 * events; what handlers hold is pending; both are 0 once the group has finished.
 */
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { ConfigError, createEventBus, defineEvents, UnknownEventError, type EventBus } from '../../src/index.js';
import { uniqueName, waitFor } from '../helpers/wait.js';

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

describe('bus.groupCounts() on native', () => {
  /** A group that exists (its only subscription closed) with N events published to it and no member. */
  async function backlog(transport: Record<string, unknown>): Promise<EventBus<typeof events>> {
    const b = await bus(transport);
    await (await b.subscribe('tick', { group: 'g' }, () => {})).close();
    await b.publishMany('tick', payloads);
    expect(await b.groupCounts({ groups: [{ type: 'tick', group: 'g' }] })).toEqual([{ type: 'tick', group: 'g', lagEvents: N, pendingEvents: 0 }]);
    return b;
  }

  it('main-thread group: the backlog is lag; what a consumer popped and holds is pending; 0 once finished', async () => {
    const b = await backlog({ type: 'native', partitions: 2, name: uniqueName('counts') });
    const g = gate();
    await b.subscribe('tick', { group: 'g', concurrency: 8 }, g.handler);
    await waitFor(async () => g.started() === 8, 5000, 'eight handlers holding their events');
    const [held] = await b.groupCounts();
    expect(held!.lagEvents! + held!.pendingEvents!).toBe(N);
    expect(held!.pendingEvents).toBeGreaterThanOrEqual(8);
    expect(held!.lagEvents).toBeGreaterThan(0); // one pop takes from one partition
    g.open();
    await b.idle();
    expect(await b.groupCounts()).toEqual([{ type: 'tick', group: 'g', lagEvents: 0, pendingEvents: 0 }]);
  });

  it('worker-thread group: what the thread popped and holds is pending, counted once; 0 once finished', async () => {
    const b = await backlog({ type: 'native', name: uniqueName('counts') });
    const seen = new Int32Array(new SharedArrayBuffer(4 * N));
    const gateCell = new Int32Array(new SharedArrayBuffer(4));
    const handler = fileURLToPath(new URL('../native/fixtures/gate-handler.mjs', import.meta.url));
    await b.subscribe('tick', { group: 'g', workers: 1, handler, workerData: { seen: seen.buffer, gate: gateCell.buffer, gateAt: 0 } });
    await waitFor(async () => ((await b.groupCounts())[0]?.pendingEvents ?? 0) > 0, 10_000, 'the thread holding what it popped');
    const [held] = await b.groupCounts();
    expect(held!.lagEvents! + held!.pendingEvents!).toBe(N);
    Atomics.store(gateCell, 0, 1);
    Atomics.notify(gateCell, 0);
    await b.idle({ timeoutMs: 10_000 });
    expect(await b.groupCounts()).toEqual([{ type: 'tick', group: 'g', lagEvents: 0, pendingEvents: 0 }]);
    expect(seen.reduce((n, x) => n + x, 0)).toBe(N);
  });
});
