import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { Worker } from 'node:worker_threads';
import { describe, expect, it } from 'vitest';
import { BackpressureError, ClosedError, ConfigError, PayloadTooLargeError } from '../../src/index.js';
import { partitionForKey } from '../../src/partition.js';
import { sleep, waitFor } from '../helpers/wait.js';
import { errorLog, fixture, nativeBuses, ticks, transportOf } from './harness.js';

/** A key that lands on `partition` of `partitions`. */
const keyOf = (partition: number, partitions: number) => {
  for (let i = 0; ; i++) if (partitionForKey(`k${i}`, partitions) === partition) return `k${i}`;
};

/** A full garbage collection (V8's gc(), exposed for this call). */
function collectGarbage(): void {
  setFlagsFromString('--expose-gc');
  (runInNewContext('gc') as () => void)();
}

/** The seqs (0..199, key `k${seq}`) of each of 2 partitions. */
const keySeqs = [0, 1].map((p) =>
  ticks(200)
    .map((t) => t.seq)
    .filter((seq) => partitionForKey(`k${seq}`, 2) === p),
);

describe.each(['native', 'js'] as const)('native transport edge cases (%s)', (implementation) => {
  const bus = nativeBuses(implementation, 'native-review');

  it('a bus sharing a named broker needs its partition count: another is a ConfigError naming transport.partitions', async () => {
    const a = await bus({ partitions: 2 });
    const name = transportOf(a).config.name;
    const seen: number[] = [];
    await a.subscribe('tick', { group: 'g' }, (e) => void seen.push(e.data.seq));
    const err = await bus({ partitions: 8, name }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ConfigError);
    expect((err as ConfigError).issues[0]!.path).toEqual(['transport', 'partitions']);
    // The refused bus took no reference: once `a` closes, the name opens a new broker (of any partition count).
    const b = await bus({ partitions: 2, name });
    await b.publishMany('tick', ticks(16), { key: (t) => `k${t.seq}` });
    await waitFor(() => seen.length === 16, 5_000, 'every event of the bus sharing the broker');
    await a.close();
    await b.close();
    const c = await bus({ partitions: 8, name });
    await c.publishMany('tick', ticks(16), { key: (t) => `k${t.seq}` });
  });

  it('worker consumers: a handler module compiled to CommonJS (exports.default, exports.setup) runs', async () => {
    const b = await bus({ partitions: 2 });
    const c = new Int32Array(new SharedArrayBuffer(4));
    await b.subscribe('tick', { group: 'cjs', workers: 2, handler: fixture('cjs-handler.cjs'), workerData: { counters: c.buffer } });
    await b.publishMany('tick', ticks(100));
    await waitFor(() => Atomics.load(c, 0) === 100, 5_000, 'every event in the CommonJS handler');
  });

  it('close() twice: the second call resolves only once the first has ended the worker threads', async () => {
    const b = await bus({ partitions: 2 });
    const c = new Int32Array(new SharedArrayBuffer(4));
    await b.subscribe('tick', { group: 'twice', workers: 2, handler: fixture('cjs-handler.cjs'), workerData: { counters: c.buffer } });
    const t = transportOf(b);
    let first = false;
    void t.close().then(() => (first = true));
    await t.close();
    // A second close() resolves only once the first has ended the threads.
    expect(first).toBe(true);
  });

  it('the transport closed under running worker subscriptions ends their threads without logging a death', async () => {
    const { errors, logger } = errorLog();
    const b = await bus({ partitions: 2 }, { logger });
    const c = new Int32Array(new SharedArrayBuffer(4));
    await b.subscribe('tick', { group: 'ended', workers: 2, handler: fixture('cjs-handler.cjs'), workerData: { counters: c.buffer } });
    await b.publishMany('tick', ticks(100));
    await waitFor(() => Atomics.load(c, 0) === 100, 5_000, 'every event in the worker threads');
    // The transport itself, not the bus: its subscriptions are still open, so the threads are ended by terminate().
    await transportOf(b).close();
    await sleep(100); // every thread's exit event has run
    // A thread ended by terminate() is not taken for one that died while its subscription was closing:
    // nothing is logged.
    expect(errors.map((e) => e.msg)).toEqual([]);
  });

  it('worker consumers: workerData a thread cannot be given (a function) rejects subscribe with ConfigError naming workerData', async () => {
    const b = await bus();
    const err = await b.subscribe('tick', { group: 'w', workers: 2, handler: fixture('count-handler.mjs'), workerData: { f: () => 1 } }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ConfigError);
    expect((err as ConfigError).issues[0]!.path).toEqual(['workerData']);
  });

  it('worker consumers: a subscribe that fails leaves no group behind to fill up and stall the publishers; a MessagePort in workerData is a ConfigError too', async () => {
    const b = await bus({ capacity: 8, backpressure: 'block', publishTimeoutMs: 300 });
    const seen: number[] = [];
    await b.subscribe('tick', { group: 'good' }, (e) => void seen.push(e.data.seq));
    const broken = await b.subscribe('tick', { group: 'broken', workers: 1, handler: fixture('throws-on-load.mjs') }).catch((e: unknown) => e);
    expect(broken).toBeInstanceOf(ConfigError);
    const { port1, port2 } = new MessageChannel();
    const port = await b.subscribe('tick', { group: 'port', workers: 1, handler: fixture('count-handler.mjs'), workerData: { port: port1 } }).catch((e: unknown) => e);
    port1.close();
    port2.close();
    // A ConfigError naming workerData, not Node's TypeError (ERR_MISSING_TRANSFERABLE_IN_TRANSFER_LIST).
    expect(port).toBeInstanceOf(ConfigError);
    expect((port as ConfigError).issues[0]!.path).toEqual(['workerData']);
    // The failed groups keep no rings: publishes past the capacity of 8 do not time out.
    for (let i = 0; i < 40; i++) await b.publish('tick', { seq: i });
    await waitFor(() => seen.length === 40, 5_000, 'every event by the group that was joined');
    expect(transportOf(b).stats('tick', 0, 'broken')).toBeUndefined();
    // The name is free: subscribing it again makes a new group, which gets what is published from then on.
    const again: number[] = [];
    await b.subscribe('tick', { group: 'broken' }, (e) => void again.push(e.data.seq));
    await b.publish('tick', { seq: 40 });
    await waitFor(() => again.length === 1, 5_000, 'the new group');
    expect(again).toEqual([40]);
  });

  it('an event whose handler outlived the drain on its last allowed delivery is dead-lettered, not run again by the next member', async () => {
    const b = await bus({}, { drainTimeoutMs: 50 });
    const log: string[] = [];
    const first = await b.subscribe('tick', { group: 'g', maxDeliveries: 1 }, (e, ctx) => {
      log.push(`first ${e.data.seq} attempt ${ctx.attempt}`);
      return new Promise(() => {});
    });
    await b.publish('tick', { seq: 7 });
    await waitFor(() => log.length === 1, 5000, 'the first delivery');
    await first.close();
    await b.subscribe('tick', { group: 'g', maxDeliveries: 1 }, (e, ctx) => void log.push(`second ${e.data.seq} attempt ${ctx.attempt}`));
    await b.idle({ timeoutMs: 2000 });
    // The first member's delivery counts: the second member does not run it as attempt 2 of 1.
    expect(log).toEqual(['first 7 attempt 1']);
    const dead = await transportOf(b).deadLetters('tick', 'g');
    expect(dead.map((d) => [d.attempts, (d.event?.data as { seq: number }).seq])).toEqual([[1, 7]]);
    expect(dead[0]!.error).toMatch(/drainTimeoutMs 50/);
  });

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

  it('worker consumers: a relative handler path, a bare file name, or a handler module with a handler function too, is a ConfigError naming handler', async () => {
    const b = await bus();
    // A relative path would resolve against eventlane's folder ("Cannot find module"), and a handler function
    // beside a module would never be called.
    const relative = await b.subscribe('tick', { group: 'w', workers: 1, handler: './count-handler.mjs' }).catch((e: unknown) => e);
    expect(relative).toBeInstanceOf(ConfigError);
    expect((relative as ConfigError).message).toContain("new URL('./count-handler.mjs', import.meta.url)");
    // A bare file name is imported as a package: the failure says so and how to name the file.
    const bare = await b.subscribe('tick', { group: 'w', workers: 1, handler: 'count-handler.mjs' }).catch((e: unknown) => e);
    expect(bare).toBeInstanceOf(ConfigError);
    expect((bare as ConfigError).message).toMatch(/imported as a package name; for a file, pass new URL\('\.\/count-handler\.mjs', import\.meta\.url\)/);
    const both = await b.subscribe('tick', { group: 'w', workers: 1, handler: fixture('count-handler.mjs') }, () => {}).catch((e: unknown) => e);
    expect(both).toBeInstanceOf(ConfigError);
    expect((both as ConfigError).issues[0]!.path).toEqual(['handler']);
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

  it('a dead letter does not keep the text of the batch its event was popped in alive', async () => {
    const b = await bus({ capacity: 4096, maxEventBytes: 4 << 20, maxLen: 0 }); // a 16 MiB arena; pops of 1,024
    let handled = 0;
    await b.subscribe('tick', { group: 'g', maxDeliveries: 1 }, (e) => {
      handled++;
      if (e.data.seq % 1000 === 0) throw new Error('poison');
    });
    const pad = 'p'.repeat(1000);
    const batches = 20; // one dead letter in each batch of 1,000 events of ~1 KB: ~1 MB of batch text each
    collectGarbage();
    // Heap and external memory: a large batch text may be an external string (the JS core's Buffer#toString).
    const used = () => process.memoryUsage().heapUsed + process.memoryUsage().external;
    const before = used();
    for (let r = 0; r < batches; r++) {
      await b.publishMany(
        'tick',
        ticks(1000, r * 1000).map((t) => ({ ...t, pad })),
      );
      await waitFor(() => handled === (r + 1) * 1000, 5_000, 'the batch handled');
    }
    const dead = await b.deadLetters('tick', { group: 'g' });
    expect(dead.map((d) => (d.event!.data as { seq: number }).seq)).toEqual(Array.from({ length: batches }, (_, r) => r * 1000));
    expect((dead[3]!.event!.data as { pad: string }).pad).toBe(pad);
    collectGarbage();
    // 20 dead letters of ~1 KB each: well under 20 x 1 MB of batch text.
    expect(used() - before).toBeLessThan(5 << 20);
  });

  it.each([false, true])('close() while a worker handler module is still loading ends its threads and rejects the subscribe with ClosedError (shared broker: %s)', async (shared) => {
    const b = await bus({ partitions: 2 });
    // With `shared`, another bus keeps the named broker open: this bus's close() does not tear the core down.
    const other = shared ? await bus({ partitions: 2, name: transportOf(b).config.name }) : undefined;
    const c = new Int32Array(new SharedArrayBuffer(8));
    const sub = b.subscribe('tick', { group: 'g', workers: 2, handler: fixture('never-ready.mjs'), workerData: { counters: c.buffer } });
    const outcome = sub.then(
      () => 'subscribed',
      (err: unknown) => err,
    );
    await waitFor(() => Atomics.load(c, 0) === 2 && Atomics.load(c, 1) > 0, 10_000, 'both threads in setup');
    await b.close();
    expect(await outcome).toBeInstanceOf(ClosedError);
    // The threads are gone: their timers stopped.
    const ticksThen = Atomics.load(c, 1);
    await sleep(100);
    expect(Atomics.load(c, 1)).toBe(ticksThen);
    if (other) {
      // The broker still works for the bus that shares it.
      const seen: number[] = [];
      await other.subscribe('tick', { group: 'g' }, (e) => void seen.push(e.data.seq));
      await other.publish('tick', { seq: 7 });
      await waitFor(() => seen.length === 1, 5_000, 'the event on the other bus');
    }
  });

  it('close() while one worker thread is ready and the other still loading: the ready one is ended, not logged as a death', async () => {
    const { errors, logger } = errorLog();
    const b = await bus({ partitions: 2 }, { logger });
    const c = new Int32Array(new SharedArrayBuffer(8));
    const sub = b.subscribe('tick', { group: 'g', workers: 2, handler: fixture('never-ready.mjs'), workerData: { counters: c.buffer, ready: 1 } });
    const outcome = sub.then(
      () => 'subscribed',
      (err: unknown) => err,
    );
    await waitFor(() => Atomics.load(c, 0) === 2 && Atomics.load(c, 1) > 0, 10_000, 'one thread ready, the other in setup');
    await sleep(50); // the ready one's message has arrived
    await b.close();
    expect(await outcome).toBeInstanceOf(ClosedError);
    await sleep(100);
    // The ready thread, ended by the close, is not logged as "died while its subscription was starting".
    expect(errors.map((e) => e.msg)).toEqual([]);
  });

  it('startFrom 0: a retained backlog larger than the ring is delivered before events published during the replay', async () => {
    const b = await bus({ capacity: 8, maxLen: 1000 });
    await b.publishMany('tick', ticks(40));
    const seen: number[] = [];
    let published: Promise<void> | undefined;
    await b.subscribe('tick', { group: 'late', startFrom: '0' }, (e) => {
      seen.push(e.data.seq);
      // While the history is still being replayed (the ring holds 8 of 40); not awaited here: under block it
      // waits for room this consumer makes.
      published ??= b.publish('tick', { seq: 1000 });
    });
    await waitFor(() => seen.length === 41, 10_000, '41 events');
    await published;
    expect(seen).toEqual([...ticks(40).map((t) => t.seq), 1000]);
  });

  it('an event too large for any ring is rejected even with no group yet, and does not break a later startFrom 0', async () => {
    const b = await bus({ capacity: 16, maxEventBytes: 16_384 });
    await b.publish('tick', { seq: 1 });
    await expect(b.publish('tick', { seq: 2 }, { headers: { big: 'x'.repeat(40_000) } })).rejects.toBeInstanceOf(PayloadTooLargeError);
    await b.publish('tick', { seq: 3 });
    const seen: number[] = [];
    await b.subscribe('tick', { group: 'late', startFrom: '0' }, (e) => void seen.push(e.data.seq));
    await waitFor(() => seen.length === 2, 5_000, '2 events');
    expect(seen).toEqual([1, 3]);
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

  it('worker consumers: a handler that put a function on the event before failing gets its retries and dead letters (the thread stopped consuming, alive)', async () => {
    const { errors, logger } = errorLog();
    const b = await bus({}, { logger });
    const counters = new Int32Array(new SharedArrayBuffer(8));
    await b.subscribe('tick', {
      group: 'u',
      workers: 1,
      maxDeliveries: 2,
      retry: { backoff: { initialMs: 5, maxMs: 5 } },
      handler: fixture('uncloneable-handler.mjs'),
      workerData: { counters: counters.buffer },
    });
    await b.publishMany('tick', ticks(20));
    // 18 succeed on their second attempt; seq 0 and 10 fail twice and are dead-lettered.
    await waitFor(() => Atomics.load(counters, 0) === 18, 10_000, 'the retries');
    await waitFor(async () => (await b.deadLetters('tick', { group: 'u' })).length === 2, 10_000, 'two dead letters');
    const dead = await b.deadLetters('tick', { group: 'u' });
    expect(dead.map((d) => (d.event?.data as { seq: number }).seq).sort()).toEqual([0, 10]);
    expect(Atomics.load(counters, 1)).toBe(40);
    // The thread goes on consuming.
    await b.publishMany('tick', ticks(5, 101));
    await waitFor(() => Atomics.load(counters, 0) === 23, 10_000, 'events published afterwards');
    expect(errors).toEqual([]);
  });

  it('worker consumers: when a replacement thread fails to load, what the dead thread held goes to the other threads', async () => {
    const { logger } = errorLog();
    const b = await bus({ partitions: 2 }, { logger });
    const seen = new Int32Array(new SharedArrayBuffer(4 * 200));
    const flags = new SharedArrayBuffer(8);
    await b.subscribe('tick', { group: 'r', workers: 2, handler: fixture('load-once-handler.mjs'), workerData: { seen: seen.buffer, flags, crashAt: 20, loads: 2 } });
    await b.publishMany('tick', ticks(200), { key: (d) => `k${d.seq}` });
    await waitFor(() => seen.every((x) => x >= 1), 10_000, 'every event delivered');
  });

  it('worker consumers: when the only thread of a member dies and its replacement fails to load, its partitions go to the other members', async () => {
    const { logger } = errorLog();
    const b = await bus({ partitions: 2 }, { logger });
    const seen = new Int32Array(new SharedArrayBuffer(4 * 200));
    const flags = new SharedArrayBuffer(8);
    // The main-thread member takes partition 0, the worker member partition 1.
    await b.subscribe('tick', { group: 'r' }, (e) => void Atomics.add(seen, e.data.seq, 1));
    await b.subscribe('tick', { group: 'r', workers: 1, handler: fixture('load-once-handler.mjs'), workerData: { seen: seen.buffer, flags, crashAt: keySeqs[1]![5]!, loads: 1 } });
    await b.publishMany('tick', ticks(200), { key: (d) => `k${d.seq}` });
    await waitFor(() => seen.every((x) => x >= 1), 10_000, 'every event delivered');
    // Events published afterwards too.
    await b.publishMany('tick', ticks(50));
    await waitFor(() => seen.subarray(0, 50).every((x) => x >= 2), 10_000, 'later events delivered');
  });

  it('worker consumers: a thread that dies while its subscription is closing is logged, and what it held goes to the group', async () => {
    const { errors, logger } = errorLog();
    const b = await bus({ partitions: 1 }, { logger });
    const seen = new Int32Array(new SharedArrayBuffer(4 * 50));
    const gate = new Int32Array(new SharedArrayBuffer(4));
    const sub = await b.subscribe('tick', { group: 'g', workers: 1, handler: fixture('gate-handler.mjs'), workerData: { seen: seen.buffer, gate: gate.buffer, gateAt: 10, exitAtGate: true } });
    await b.publishMany('tick', ticks(50));
    await waitFor(() => seen[9] === 1, 5_000, 'the worker to reach the gated event');
    // The subscription closes while the handler of seq 10 runs; then that handler ends its thread.
    const closing = sub.close();
    await sleep(20);
    Atomics.store(gate, 0, 1);
    Atomics.notify(gate, 0);
    await closing;
    // No replacement thread is started for a member that is leaving, but the death is logged, once.
    expect(errors.filter((e) => /consumer thread died/.test(e.msg))).toHaveLength(1);
    const onMain = new Int32Array(50);
    await b.subscribe('tick', { group: 'g' }, (e) => void Atomics.add(onMain, e.data.seq, 1));
    await waitFor(() => seen.every((x, i) => x + onMain[i]! >= 1), 5_000, 'every event, the one the thread died on included');
  });

  it('worker consumers: a thread that dies takes back its own held records, not those another thread holds in a partition it gave up', async () => {
    const { logger } = errorLog();
    const b = await bus({ partitions: 2 }, { logger });
    const key1 = keyOf(1, 2);
    const seenA = new Int32Array(new SharedArrayBuffer(4 * 8));
    const gateA = new Int32Array(new SharedArrayBuffer(4));
    // Member A comes first and owns both partitions; it pops seq 0 (partition 1) and blocks on it.
    await b.subscribe('tick', { group: 'g', workers: 1, handler: fixture('gate-handler.mjs'), workerData: { seen: seenA.buffer, gate: gateA.buffer, gateAt: 0, exitAtGate: true } });
    await b.publish('tick', { seq: 0 }, { key: key1 });
    await waitFor(() => transportOf(b).stats('tick', 1, 'g')!.held === 1, 5_000, 'member A holding seq 0');
    // Member B joins and takes partition 1 in the rebalance; it pops seqs 1..5 there and blocks on seq 1,
    // holding all five.
    const seenB = new Int32Array(new SharedArrayBuffer(4 * 8));
    const gateB = new Int32Array(new SharedArrayBuffer(4));
    await b.subscribe('tick', { group: 'g', workers: 1, handler: fixture('gate-handler.mjs'), workerData: { seen: seenB.buffer, gate: gateB.buffer, gateAt: 1 } });
    await b.publishMany('tick', ticks(5, 1), { key: () => key1 });
    await waitFor(() => transportOf(b).stats('tick', 1, 'g')!.held === 6, 5_000, 'member B holding seqs 1..5');
    // A's thread dies holding seq 0: that goes to B (partition 1 is B's now)...
    Atomics.store(gateA, 0, 1);
    Atomics.notify(gateA, 0);
    await waitFor(() => transportOf(b).stats('tick', 1, 'g')!.held <= 5, 5_000, "seq 0 taken back from A's thread");
    Atomics.store(gateB, 0, 1);
    Atomics.notify(gateB, 0);
    await waitFor(() => seenB[0] === 1, 5_000, 'seq 0 delivered again, to member B');
    await sleep(100);
    // ...and seqs 1..5, which B held, stay B's: each handled once, not taken back with seq 0 and handed to B
    // a second time.
    expect([...seenB.subarray(1, 6)]).toEqual([1, 1, 1, 1, 1]);
    expect(seenA[0]).toBe(0);
  });

  it('worker consumers (concurrency > 1): events that finished after a slow one are acknowledged, so a thread that dies on it does not have them delivered again', async () => {
    const { logger } = errorLog();
    const b = await bus({ partitions: 1 }, { logger });
    const seen = new Int32Array(new SharedArrayBuffer(4 * 300));
    const gate = new Int32Array(new SharedArrayBuffer(8));
    await b.subscribe('tick', { group: 'g', workers: 1, concurrency: 8, handler: fixture('exit-later-handler.mjs'), workerData: { seen: seen.buffer, gate: gate.buffer, exitAt: 0 } });
    await b.publishMany('tick', ticks(300));
    await waitFor(() => seen.subarray(1).every((x) => x === 1), 5_000, 'every event but seq 0 handled');
    Atomics.store(gate, 0, 1); // the handler of seq 0 ends its thread
    await waitFor(() => seen[0] === 1, 5_000, 'seq 0 delivered again, to the replacement thread');
    await sleep(100);
    // At most the events finished since the last acknowledgement (fewer than 64) come back: events finished
    // after seq 0 in its batch are acknowledged, not held back behind it.
    const again = seen.subarray(1).filter((x) => x > 1).length;
    expect(again).toBeLessThan(64);
  });

  it('worker consumers: a thread that dies while the subscription is still starting is replaced once it has', async () => {
    const { logger, errors } = errorLog();
    const b = await bus({ partitions: 2 }, { logger });
    const order = new Int32Array(new SharedArrayBuffer(4));
    const byPartition = new Int32Array(new SharedArrayBuffer(8));
    await b.subscribe('tick', { group: 'g', workers: 2, handler: fixture('exit-while-starting.mjs'), workerData: { order: order.buffer, byPartition: byPartition.buffer } });
    expect(errors.filter((e) => /died while its subscription was starting/.test(e.msg))).toHaveLength(1);
    await waitFor(() => Atomics.load(order, 0) === 3, 5_000, 'the replacement thread to load');
    await sleep(50); // its partition is assigned once it is ready
    await b.publishMany('tick', ticks(200));
    await waitFor(() => byPartition[0] !== 0 && byPartition[1] !== 0, 5_000, 'events on both partitions');
    // The replacement thread takes a partition: the surviving thread does not keep both.
    expect(byPartition[0]).not.toBe(byPartition[1]);
  });

  it('worker consumers: events handed to a thread that stops before it reads them go back to the group', async () => {
    // The bus's drain timeout bounds each close: the main member's (its handler never settles), and the worker's,
    // whose handler finishes as soon as the gate opens.
    const b = await bus({ partitions: 2, capacity: 4 }, { drainTimeoutMs: 500 }); // pops of one event
    const seen = new Int32Array(new SharedArrayBuffer(4 * 8));
    const gate = new Int32Array(new SharedArrayBuffer(4));
    // The main-thread member subscribes first (partition 0 then stays with it); its handler of seq 1 never settles.
    const main = await b.subscribe('tick', { group: 'g' }, async (e) => {
      if (e.data.seq === 1) await new Promise(() => {});
      Atomics.add(seen, e.data.seq, 1);
    });
    const workers = await b.subscribe('tick', { group: 'g', workers: 1, handler: fixture('gate-handler.mjs'), workerData: { seen: seen.buffer, gate: gate.buffer, gateAt: 0 } });
    // seq 0 to partition 1 (the worker, held at the gate), seq 1 to partition 0 (the main member, stuck).
    await b.publish('tick', { seq: 0 }, { key: keyOf(1, 2) });
    await b.publish('tick', { seq: 1 }, { key: keyOf(0, 2) });
    await waitFor(() => transportOf(b).stats('tick', 1, 'g')!.held === 1 && transportOf(b).stats('tick', 0, 'g')!.popped === 1, 5_000, 'both handlers running');
    // The main member leaves after its drain timeout: seq 1 is handed to the worker thread (a message it
    // cannot read while its handler blocks). Then the worker subscription closes, then the gate opens.
    await main.close();
    const closing = workers.close();
    Atomics.store(gate, 0, 1);
    Atomics.notify(gate, 0);
    await closing;
    const onMain = new Int32Array(8);
    await b.subscribe('tick', { group: 'g' }, (e) => void Atomics.add(onMain, e.data.seq, 1));
    await waitFor(() => seen[1]! + onMain[1]! >= 1, 5_000, 'seq 1 delivered again');
  });
});
