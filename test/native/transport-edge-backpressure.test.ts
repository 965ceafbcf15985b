/** Native transport edge cases of backpressure: a closed group stalling block publishers, drop-oldest with the room held by handlers, units refused by error with several groups. */
import { Worker } from 'node:worker_threads';
import { describe, expect, it } from 'vitest';
import { BackpressureError, ConfigError } from '../../src/index.js';
import { sleep, waitFor } from '../helpers/wait.js';
import { fixture, nativeBuses, ticks, transportOf } from './harness.js';

describe.each(['native', 'js'] as const)('native transport edge cases (%s)', (implementation) => {
  const bus = nativeBuses(implementation, 'native-review');

  it('deleteGroup: a group whose subscriptions closed stops stalling block publishers once deleted; one with members is refused', async () => {
    const b = await bus({ capacity: 8, backpressure: 'block', publishTimeoutMs: 200 });
    const t = transportOf(b);
    const seen: number[] = [];
    await b.subscribe('tick', { group: 'live' }, (e) => void seen.push(e.data.seq));
    const audit = await b.subscribe('tick', { group: 'audit' }, () => {});
    await audit.close();
    // The closed group keeps its ring (its events wait for a member): full, it stalls the publisher.
    for (let i = 0; i < 8; i++) await b.publish('tick', { seq: i });
    await expect(b.publish('tick', { seq: 8 })).rejects.toThrow(/group "audit"\) stayed full/);
    const err = await Promise.resolve()
      .then(() => t.deleteGroup('tick', 'live'))
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ConfigError);
    expect((err as ConfigError).message).toMatch(/group "live" of "tick" has members/);
    // A publish waiting for room in the deleted group's ring stops waiting.
    const waiting = b.publish('tick', { seq: 9 });
    await sleep(20);
    expect(t.deleteGroup('tick', 'audit')).toBe(true);
    await waiting;
    expect(t.deleteGroup('tick', 'audit')).toBe(false);
    expect(t.stats('tick', 0, 'audit')).toBeUndefined();
    for (let i = 10; i < 40; i++) await b.publish('tick', { seq: i });
    // The refused one too: the live group's ring had taken it (documented for block with several groups).
    await waitFor(() => seen.length === 40, 5_000, 'every event, by the live group');
    expect(seen).toEqual(ticks(40).map((x) => x.seq));
  });

  it('drop-oldest never freezes the event loop when the room is held by handlers: the rest is dropped as the newest', async () => {
    // A group made by a `block` bus: its worker thread holds what it pops until its handlers finish. A
    // drop-oldest bus on the same broker then finds nothing to evict while that thread is busy.
    const a = await bus({ capacity: 8 });
    const b = await bus({ capacity: 8, backpressure: 'drop-oldest', name: transportOf(a).config.name });
    const seen = new Int32Array(new SharedArrayBuffer(4 * 16));
    const gate = new Int32Array(new SharedArrayBuffer(4));
    // Concurrency 8: the thread pops one event per handler slot, the whole ring.
    await a.subscribe('tick', { group: 'g', workers: 1, concurrency: 8, handler: fixture('gate-handler.mjs'), workerData: { seen: seen.buffer, gate: gate.buffer, gateAt: 0 } });
    await b.publishMany('tick', ticks(8));
    await waitFor(() => transportOf(b).stats('tick', 0, 'g')!.held === 8, 5_000, 'the worker to hold all 8');
    // Another thread opens the gate after 1 s whatever happens here, so a push stuck in the core cannot hang the test.
    const opener = new Worker(
      "const { workerData } = require('node:worker_threads'); const g = new Int32Array(workerData); Atomics.wait(g, 0, 0, 1000); Atomics.store(g, 0, 1); Atomics.notify(g, 0);",
      { eval: true, workerData: gate.buffer },
    );
    let turns = 0;
    const timer = setInterval(() => turns++, 1);
    await sleep(5);
    const turnsBefore = turns;
    await b.publish('tick', { seq: 8 }); // returns without spinning in the core until the handler returns (here: never)
    expect(transportOf(b).stats('tick', 0, 'g')).toMatchObject({ pushed: 8, droppedNewest: 1, droppedOldest: 0, held: 8 });
    await sleep(20);
    clearInterval(timer);
    expect(turns).toBeGreaterThan(turnsBefore); // the event loop went on
    await opener.terminate();
    Atomics.store(gate, 0, 1);
    Atomics.notify(gate, 0);
    await waitFor(() => seen.subarray(0, 8).every((x) => x === 1), 5_000, 'the 8 held events handled');
    // Room again: the next events are taken, evicting the oldest queued ones as usual.
    await b.publishMany('tick', ticks(8, 8));
    await waitFor(() => seen.subarray(8, 16).every((x) => x === 1), 5_000, 'the next 8');
  });

  it('error: with several groups, a unit one group cannot take is taken by none', async () => {
    const b = await bus({ capacity: 4, backpressure: 'error' }, { drainTimeoutMs: 50 });
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    const a: number[] = [];
    const c: number[] = [];
    await b.subscribe('tick', { group: 'a' }, (e) => void a.push(e.data.seq));
    await b.subscribe('tick', { group: 'b' }, async () => void (await gate));
    await b.subscribe('tick', { group: 'c' }, (e) => void c.push(e.data.seq));
    for (let i = 0; i < 5; i++) {
      // One at a time: a and c keep up; b holds the first in its stuck handler and the other 4 fill its ring.
      await b.publish('tick', { seq: i });
      await waitFor(() => a.length === i + 1 && c.length === i + 1, 5_000, 'a and c');
    }
    await expect(b.publish('tick', { seq: 100 })).rejects.toBeInstanceOf(BackpressureError);
    const t = transportOf(b);
    expect(t.stats('tick', 0, 'b')).toMatchObject({ pushed: 5, rejected: 1 });
    for (const g of ['a', 'c']) expect(t.stats('tick', 0, g)).toMatchObject({ pushed: 5, rejected: 0 });
    release();
    // A later event: once a and c have it, they would have had the refused one (each delivers in order).
    await waitFor(() => t.stats('tick', 0, 'b')!.size < 4, 5_000, 'room in b');
    await b.publish('tick', { seq: 101 });
    await waitFor(() => a.length === 6 && c.length === 6, 5_000, 'the later event in a and c');
    expect(a).toEqual([0, 1, 2, 3, 4, 101]);
    expect(c).toEqual([0, 1, 2, 3, 4, 101]);
    // Not retained either: a group created later from the start does not get it.
    const late: number[] = [];
    await b.subscribe('tick', { group: 'late', startFrom: '0' }, (e) => void late.push(e.data.seq));
    await waitFor(() => late.length === 6, 5_000, 'the history in a new group');
    expect(late).toEqual([0, 1, 2, 3, 4, 101]);
  });

  it('error: a ring that gains room while a unit is refused does not take it', async () => {
    const b = await bus({ capacity: 4, backpressure: 'error' }, { drainTimeoutMs: 50 });
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    const a: number[] = [];
    await b.subscribe('tick', { group: 'a' }, (e) => void a.push(e.data.seq));
    await b.subscribe('tick', { group: 'b' }, async () => void (await gate));
    await b.subscribe('tick', { group: 'c' }, async () => void (await gate));
    for (let i = 0; i < 5; i++) {
      // b and c each hold the first event in a stuck handler; the other 4 fill their rings.
      await b.publish('tick', { seq: i });
      await waitFor(() => a.length === i + 1, 5_000, 'a');
    }
    // A consumer of the first full ring (b's) makes room right after the publisher found it full: the core
    // call that looks is followed, on this thread, by a pop from that ring (as a consumer thread could do).
    const t = transportOf(b);
    const core = t.core;
    const push = core.push.bind(core);
    let madeRoom = false;
    core.push = (lane, partition, bytes, lens, chars, n, mode) => {
      const done = push(lane, partition, bytes, lens, chars, n, mode);
      if (done < n && !madeRoom) {
        madeRoom = true;
        expect(core.pop(lane, Uint32Array.of(partition), 1, 0, 1, new Uint32Array(3), 0, 0)).not.toBeNull();
      }
      return done;
    };
    try {
      await expect(b.publish('tick', { seq: 100 })).rejects.toBeInstanceOf(BackpressureError);
    } finally {
      delete (core as { push?: unknown }).push;
    }
    expect(madeRoom).toBe(true);
    // Refused means refused everywhere: no ring took it (b's had room by then), each full one counted it.
    expect(t.stats('tick', 0, 'a')).toMatchObject({ pushed: 5, rejected: 0 });
    expect(t.stats('tick', 0, 'b')).toMatchObject({ pushed: 5, rejected: 1, size: 3 });
    expect(t.stats('tick', 0, 'c')).toMatchObject({ pushed: 5, rejected: 1, size: 4 });
    expect(t.totals('tick')).toMatchObject({ pushed: 15, rejected: 2 });
    release();
  });
});
