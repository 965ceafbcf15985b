/** Native transport consumers: worker-thread delivery, handler modules that fail to load, closing subscriptions and buses, a main-thread backlog. */
import { describe, expect, it } from 'vitest';
import { ConfigError } from '../../src/index.js';
import { sleep, waitFor } from '../helpers/wait.js';
import { fixture, nativeBuses, ticks, transportOf } from './harness.js';

describe.each(['native', 'js'] as const)('native transport (%s)', (implementation) => {
  const bus = nativeBuses(implementation, 'native-test');

  it('worker consumers: every event exactly once, per-key order kept', async () => {
    const b = await bus({ partitions: 4, capacity: 1024 });
    const counters = new SharedArrayBuffer(12);
    const c = new Int32Array(counters);
    const sub = await b.subscribe('tick', { group: 'w', workers: 3, handler: fixture('count-handler.mjs'), workerData: { counters } });
    const n = 20_000;
    await b.publishMany('tick', ticks(n), { key: (d) => `k${d.seq % 13}` });
    await waitFor(() => Atomics.load(c, 0) >= n, 15_000, `${n} events in workers`);
    await sleep(50);
    expect(Atomics.load(c, 0)).toBe(n);
    expect(Atomics.load(c, 1)).toBe(((n * (n - 1)) / 2) | 0);
    expect(Atomics.load(c, 2)).toBe(0);
    const t0 = Date.now();
    await sub.close();
    expect(Date.now() - t0).toBeLessThan(3000);
  });

  it('worker consumers: a publish() reaches a waiting worker at once, inside a synchronous burst', async () => {
    const b = await bus();
    const counters = new Int32Array(new SharedArrayBuffer(12));
    const sub = await b.subscribe('tick', { group: 'eager', workers: 1, handler: fixture('count-handler.mjs'), workerData: { counters: counters.buffer } });
    const waiting = transportOf(b).waitingConsumers('tick');
    await waitFor(() => Atomics.load(waiting, 0) === 1, 5_000, 'the idle worker counts itself as waiting');
    // Without the waiting count the event would wait in the batch for the next microtask, which this
    // synchronous loop never lets run: it would spin to its deadline with nothing delivered.
    const pending = [b.publish('tick', { seq: 1 })];
    const deadline = Date.now() + 5_000;
    while (Atomics.load(counters, 0) === 0 && Date.now() < deadline) {
      /* spin: no microtask runs */
    }
    expect(Atomics.load(counters, 0)).toBe(1);
    // The rest of the burst: every event arrives once.
    for (let i = 2; i <= 2_000; i++) pending.push(b.publish('tick', { seq: i }));
    await Promise.all(pending);
    await waitFor(() => Atomics.load(counters, 0) === 2_000, 10_000, 'all 2,000 delivered');
    expect(Atomics.load(counters, 1)).toBe((2_000 * 2_001) / 2);
    await sub.close();
    expect(Atomics.load(waiting, 0)).toBe(0);
  });
  it.each(['throws-on-load.mjs', 'no-default.mjs', 'missing-module.mjs'])('a worker module that fails to load (%s) rejects with ConfigError and loses nothing', async (mod) => {
    const b = await bus({ partitions: 2 });
    const seen = new Set<number>();
    await b.publishMany('tick', ticks(50));
    await expect(b.subscribe('tick', { group: 'x', startFrom: '0', workers: 2, handler: fixture(mod) })).rejects.toBeInstanceOf(ConfigError);
    await b.publishMany('tick', ticks(50, 50));
    await b.subscribe('tick', { group: 'x', startFrom: '0' }, (e) => void seen.add(e.data.seq));
    await waitFor(() => seen.size === 100, 5000, 'all 100 events in the group');
  });

  it('closing a worker subscription hands undelivered events back to the group', async () => {
    const b = await bus({ partitions: 1, capacity: 4096 });
    const counters = new SharedArrayBuffer(4);
    const c = new Int32Array(counters);
    const sub = await b.subscribe('tick', { group: 'h', workers: 1, handler: fixture('slow-handler.mjs'), workerData: { counters } });
    await b.publishMany('tick', ticks(300));
    await waitFor(() => Atomics.load(c, 0) > 10, 5000, 'some events in the worker');
    await sub.close();
    const inWorker = Atomics.load(c, 0);
    const seen = new Set<number>();
    await b.subscribe('tick', { group: 'h' }, (e) => void seen.add(e.data.seq));
    await waitFor(() => inWorker + seen.size >= 300, 5000, 'the rest on the main thread');
    expect(inWorker + seen.size).toBe(300);
  });

  it('closing a worker subscription whose handler never returns: the thread is ended and its events go to the group', async () => {
    const b = await bus({ partitions: 1 }, { drainTimeoutMs: 100 });
    const seen = new Int32Array(new SharedArrayBuffer(4 * 200));
    const sub = await b.subscribe('tick', { group: 's', workers: 1, handler: fixture('stuck-handler.mjs'), workerData: { seen: seen.buffer, stuckAt: 50 } });
    await b.publishMany('tick', ticks(200));
    await waitFor(() => seen[49] === 1, 5000, 'the worker to reach the stuck event');
    await sub.close(); // drain timeout, then the grace period, then terminate()
    const onMain = new Int32Array(200);
    await b.subscribe('tick', { group: 's' }, (e) => void Atomics.add(onMain, e.data.seq, 1));
    await waitFor(() => seen.every((x, i) => x + onMain[i]! >= 1), 5000, 'every event, the stuck one included');
    expect(onMain[50]).toBe(1);
  });

  it('bus.close() with running workers does not hang', async () => {
    const b = await bus({ partitions: 2 });
    const counters = new SharedArrayBuffer(12);
    await b.subscribe('tick', { group: 'c', workers: 2, handler: fixture('count-handler.mjs'), workerData: { counters } });
    await b.publishMany('tick', ticks(100));
    const t0 = Date.now();
    await b.close();
    expect(Date.now() - t0).toBeLessThan(3000);
  });

  it('a main-thread consumer delivers a long backlog in slices, letting the event loop turn', async () => {
    const b = await bus({ maxLen: 200_000, capacity: 262_144 });
    await b.publishMany('tick', ticks(200_000));
    let handled = 0;
    let atTimer = -1;
    await b.subscribe('tick', { group: 'slow', startFrom: '0' }, () => {
      handled++;
      for (let i = 0; i < 200; i++) Math.sqrt(i); // a little work per event
    });
    setTimeout(() => (atTimer = handled), 0);
    await waitFor(() => handled === 200_000, 20_000, 'the whole backlog');
    expect(atTimer).toBeGreaterThanOrEqual(0);
    expect(atTimer).toBeLessThan(200_000); // the timer ran while the backlog was being delivered
  });
});
