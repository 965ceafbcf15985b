/**
 * `bus.idle()` on the native transport: it resolves only once every group of the bus has finished what was
 * published (worker threads and main-thread members, retries and dead letters included), so `close()` right
 * after it drops nothing; and it gives up with TimeoutError while a worker's handler is still running.
 */
import { describe, expect, it } from 'vitest';
import { TimeoutError } from '../../src/index.js';
import { fixture, nativeBuses, ticks, transportOf } from './harness.js';

const fast = { retry: { backoff: { initialMs: 10, maxMs: 20 } } };

describe.each(['native', 'js'] as const)('bus.idle() on native (%s)', (implementation) => {
  const bus = nativeBuses(implementation, `idle-${implementation}`);

  it('waits for worker threads to finish, retries (outside the ring) and dead letters included', async () => {
    const b = await bus({ partitions: 3, capacity: 256 });
    const counters = new SharedArrayBuffer(8);
    const c = new Int32Array(counters);
    // Every first attempt fails; seq % 10 === 0 always fails and is dead-lettered after 3.
    await b.subscribe('tick', { group: 'workers', workers: 2, maxDeliveries: 3, ...fast, handler: fixture('flaky-handler.mjs'), workerData: { counters } });
    await b.publishMany('tick', ticks(2000));
    await b.idle({ timeoutMs: 20_000 });
    // Read at once, with no waiting: idle() resolved only after all of it.
    expect(Atomics.load(c, 0)).toBe(1800);
    expect((await b.transport.deadLetters!('tick', 'workers')).length).toBe(200);
    const t = transportOf(b).totals('tick');
    expect(t.size + t.held).toBe(0);
  });

  it('waits for main-thread members, their retries included', async () => {
    const b = await bus({ partitions: 3 });
    let handled = 0;
    await b.subscribe('tick', { group: 'main', concurrency: 4, maxDeliveries: 3, ...fast }, async (e, ctx) => {
      if (ctx.attempt === 1 && e.data.seq % 2 === 0) throw new Error('first attempt fails');
      await new Promise((r) => setTimeout(r, e.data.seq % 3));
      handled++;
    });
    await b.publishMany('tick', ticks(1000));
    await b.idle({ timeoutMs: 20_000 });
    expect(handled).toBe(1000);
  });

  it('close() right after idle() has dropped nothing a slow worker group had queued', async () => {
    const b = await bus({ partitions: 2 });
    const counters = new SharedArrayBuffer(4);
    const c = new Int32Array(counters);
    await b.subscribe('tick', { group: 'slow', workers: 1, handler: fixture('slow-handler.mjs'), workerData: { counters } });
    await b.publishMany('tick', ticks(300)); // ~1 ms of CPU each
    await b.idle({ timeoutMs: 20_000 });
    await b.close();
    expect(Atomics.load(c, 0)).toBe(300);
  });

  it('drop-oldest: never reports a worker group idle in the instant between its pop and its count of what it popped', async () => {
    // Under drop-oldest a pop that released the records before the thread counted them in its shared cell
    // would leave an instant in which a look finds nothing anywhere. Here the main thread looks as fast as it
    // can after each publish: whenever it finds the group idle, every event must have been delivered.
    const b = await bus({ partitions: 1, capacity: 1024, backpressure: 'drop-oldest' });
    const counters = new SharedArrayBuffer(12);
    const c = new Int32Array(counters);
    await b.subscribe('tick', { group: 'g', workers: 1, handler: fixture('count-handler.mjs'), workerData: { counters } });
    const t = transportOf(b);
    let early = 0;
    let looks = 0;
    for (let round = 1; round <= 1500; round++) {
      await b.publishMany('tick', ticks(4));
      for (;;) {
        looks++;
        const unfinished = t.unfinished('tick', 'g');
        const delivered = Atomics.load(c, 0);
        if (unfinished > 0) continue;
        if (delivered !== round * 4) early++;
        break;
      }
      while (Atomics.load(c, 0) < round * 4) await new Promise((r) => setImmediate(r));
    }
    expect({ early, dropped: t.totals('tick').droppedOldest + t.totals('tick').droppedNewest }).toEqual({ early: 0, dropped: 0 });
    expect(looks).toBeGreaterThan(1500);
  }, 60_000);

  it('a worker thread that runs out of events says at once that it holds none (idle() does not wait for its sleep to end)', async () => {
    // The thread's shared count goes down only every 64 events, and exactly when it finds nothing to pop:
    // that has to be before it sleeps in the pop (up to 20 ms), not after.
    const b = await bus({ partitions: 1 });
    const counters = new SharedArrayBuffer(12);
    const c = new Int32Array(counters);
    await b.subscribe('tick', { group: 'g', workers: 1, handler: fixture('count-handler.mjs'), workerData: { counters } });
    const t = transportOf(b);
    const waits: number[] = [];
    for (let round = 1; round <= 30; round++) {
      await b.publishMany('tick', ticks(4));
      while (Atomics.load(c, 0) < round * 4) await new Promise((r) => setImmediate(r));
      const from = performance.now();
      while (t.unfinished('tick', 'g') > 0 && performance.now() - from < 200) await new Promise((r) => setImmediate(r));
      waits.push(performance.now() - from);
    }
    waits.sort((x, y) => x - y);
    expect(waits[15]).toBeLessThan(10); // the median; 20 ms and more before
  });

  it('rejects with TimeoutError naming the group while a worker handler has not returned', async () => {
    const b = await bus({}, { drainTimeoutMs: 200 });
    const gate = new Int32Array(new SharedArrayBuffer(8));
    const seen = new SharedArrayBuffer(8);
    await b.subscribe('tick', { group: 'gated', workers: 1, handler: fixture('gate-handler.mjs'), workerData: { gate: gate.buffer, seen, gateAt: 1 } });
    await b.publish('tick', { seq: 1 });
    const err = await b.idle({ timeoutMs: 300 }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(TimeoutError);
    expect((err as Error).message).toMatch(/"tick" group "gated": [1-9]/);
    Atomics.store(gate, 0, 1);
    Atomics.notify(gate, 0);
    await b.idle({ timeoutMs: 10_000 });
  });
});
