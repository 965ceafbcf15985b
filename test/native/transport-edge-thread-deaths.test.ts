/** Native transport edge cases of worker threads that die or stop: replacements that fail to load, deaths while closing or starting, what each thread held. */
import { describe, expect, it } from 'vitest';
import { partitionForKey } from '../../src/partition.js';
import { sleep, waitFor } from '../helpers/wait.js';
import { errorLog, fixture, nativeBuses, ticks, transportOf } from './harness.js';

/** A key that lands on `partition` of `partitions`. */
const keyOf = (partition: number, partitions: number) => {
  for (let i = 0; ; i++) if (partitionForKey(`k${i}`, partitions) === partition) return `k${i}`;
};

/** The seqs (0..199, key `k${seq}`) of each of 2 partitions. */
const keySeqs = [0, 1].map((p) =>
  ticks(200)
    .map((t) => t.seq)
    .filter((seq) => partitionForKey(`k${seq}`, 2) === p),
);

describe.each(['native', 'js'] as const)('native transport edge cases (%s)', (implementation) => {
  const bus = nativeBuses(implementation, 'native-review');

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
