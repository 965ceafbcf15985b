import { describe, expect, it } from 'vitest';
import { ConfigError } from '../../src/errors.js';
import { waitFor } from '../helpers/wait.js';
import { errorLog, fixture, nativeBuses, ticks, transportOf } from './harness.js';

// A deleted consumer group's rings are given back (the core's lane is freed), at once or as the last of its
// consumer threads exits, so a transport can create and delete groups for as long as it runs.

/** A logger that keeps error() and warn() calls (its children too). */
function log() {
  const { errors, logger: base } = errorLog();
  const warnings: string[] = [];
  const logger = { ...base, warn: (_obj: unknown, msg: string) => void warnings.push(msg), child: () => logger };
  return { errors, warnings, logger };
}

/** Rings with a write waiting for room (the private `blocked` of NativeTransport's private `rings`, blocked-rings.ts). */
const blockedRings = (t: unknown) => (t as { rings: { blocked: Map<string, unknown> } }).rings.blocked.size;

describe.each(['native', 'js'] as const)('deleting consumer groups gives their rings back (%s)', (implementation) => {
  const bus = nativeBuses(implementation, 'group-delete');

  it('subscribe, close, deleteGroup 4,200 times in one transport: each subscribe works, and the core holds no lane afterwards', async () => {
    const b = await bus({ capacity: 2, maxEventBytes: 256 }); // a 1 KiB arena
    const t = transportOf(b);
    const start = t.core.usage();
    for (let i = 0; i < 4200; i++) {
      const sub = await b.subscribe('tick', { group: `g${i}` }, () => {});
      await sub.close();
      expect(t.deleteGroup('tick', `g${i}`)).toBe(true);
    }
    expect(t.core.usage()).toEqual(start);
    // And the transport still delivers.
    const seen: number[] = [];
    await b.subscribe('tick', { group: 'last' }, (e) => void seen.push(e.data.seq));
    await b.publishMany('tick', ticks(3));
    await waitFor(() => seen.length === 3, 5_000, 'the last group to get its events');
  });

  it("a deleted group's worker thread finishes the event it was handling: the lane stays until the thread exits, then it is freed", async () => {
    const { errors, logger } = log();
    const b = await bus({ capacity: 64 }, { logger });
    const t = transportOf(b);
    const start = t.core.usage();
    const seen = new Int32Array(new SharedArrayBuffer(4 * 20));
    const gate = new Int32Array(new SharedArrayBuffer(4));
    const sub = await b.subscribe('tick', { group: 'w', workers: 1, handler: fixture('gate-handler.mjs'), workerData: { seen: seen.buffer, gate: gate.buffer, gateAt: 3 } });
    await b.publishMany('tick', ticks(20));
    await waitFor(() => seen[2] === 1, 5_000, 'the thread to reach the gated event');
    // The subscription closes while its thread is inside the handler of seq 3 (holding it in the ring).
    const closing = sub.close();
    expect(t.deleteGroup('tick', 'w')).toBe(true);
    expect(t.stats('tick', 0, 'w')).toBeUndefined();
    expect(t.core.usage().lanes).toBe(start.lanes + 1); // still used by the thread
    Atomics.store(gate, 0, 1);
    Atomics.notify(gate, 0);
    await closing;
    // The handler finished and the thread acknowledged what it held (a freed lane would throw in its ack).
    expect(seen[3]).toBe(1);
    await waitFor(() => t.core.usage().lanes === start.lanes, 5_000, 'the lane to be freed once the thread exited');
    expect(t.core.usage()).toEqual(start);
    expect(errors).toEqual([]);
  });

  it("a subscribe whose handler module fails to load: its new group's rings, and the history replay waiting for room in them, are given up", async () => {
    const { errors, warnings, logger } = log();
    const b = await bus({ capacity: 8, maxLen: 100, publishTimeoutMs: 5_000 }, { logger });
    const t = transportOf(b);
    const start = t.core.usage();
    await b.publishMany('tick', ticks(40)); // retained: replayed into the new group's ring, 8 at a time
    const subscribing = b.subscribe('tick', { group: 'x', startFrom: '0', workers: 1, handler: fixture('throws-on-load.mjs') }).catch((e: unknown) => e);
    expect(blockedRings(t)).toBe(1); // the rest of the replay waits for room
    expect(await subscribing).toBeInstanceOf(ConfigError);
    await waitFor(() => t.core.usage().lanes === start.lanes, 5_000, "the failed group's lane to be freed");
    expect(t.core.usage()).toEqual(start);
    // The same name subscribes again: a new group, its own rings, the history replayed in full.
    const seen: number[] = [];
    const sub = await b.subscribe('tick', { group: 'x', startFrom: '0' }, (e) => void seen.push(e.data.seq));
    await waitFor(() => seen.length === 40, 5_000, 'the history, in the new group');
    expect(seen).toEqual(ticks(40).map((x) => x.seq));
    await sub.close();
    expect(t.deleteGroup('tick', 'x')).toBe(true);
    expect(t.core.usage()).toEqual(start);
    expect(warnings.filter((w) => /replay incomplete/.test(w))).toEqual([]);
    expect(errors).toEqual([]);
  });

  it('two subscribes joining a new group at once, both failing to load: the group is taken out and its lane freed', async () => {
    const b = await bus({ capacity: 8, backpressure: 'block', publishTimeoutMs: 2_000 });
    const t = transportOf(b);
    const start = t.core.usage();
    // The second finds the group the first is creating (not its own): the last failed join takes it out,
    // whichever of the two created it.
    const first = b.subscribe('tick', { group: 'x', workers: 1, handler: fixture('throws-on-load.mjs') }).catch((e: unknown) => e);
    const second = b.subscribe('tick', { group: 'x', workers: 1, handler: fixture('throws-on-load.mjs') }).catch((e: unknown) => e);
    expect(await first).toBeInstanceOf(ConfigError);
    expect(await second).toBeInstanceOf(ConfigError);
    await waitFor(() => t.core.usage().lanes === start.lanes, 5_000, "the failed group's lane to be freed");
    expect(t.stats('tick', 0, 'x')).toBeUndefined();
    // Nobody's rings take the type's events: more than they hold publish without waiting for room.
    await b.publishMany('tick', ticks(20));
  });

  it('a publish waiting for room in a deleted group stops waiting and writes nothing to the freed lane', async () => {
    const b = await bus({ capacity: 8, backpressure: 'block', publishTimeoutMs: 5_000 });
    const t = transportOf(b);
    const start = t.core.usage();
    const audit = await b.subscribe('tick', { group: 'audit' }, () => {});
    await audit.close();
    await b.publishMany('tick', ticks(8));
    const waiting = b.publishMany('tick', ticks(4, 8)); // no room: waits
    await waitFor(() => blockedRings(t) === 1, 5_000, 'the write to wait for room');
    expect(t.deleteGroup('tick', 'audit')).toBe(true);
    expect(t.core.usage()).toEqual(start); // nobody used it: freed at once
    await waiting; // resolves: no such group any more (a push to the freed lane would reject)
  });
});
