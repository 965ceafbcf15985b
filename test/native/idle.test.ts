/**
 * `bus.idle()` on the native transport: it resolves only once every group of the bus has finished what was
 * published (worker threads and main-thread members, retries and dead letters included), so `close()` right
 * after it drops nothing; and it gives up with TimeoutError while a worker's handler is still running.
 */
import { describe, expect, it } from 'vitest';
import { TimeoutError } from '../../src/index.js';
import { fixture, nativeBuses, ticks, transportOf } from './harness.js';

const fast = { retry: { backoff: { initialMs: 10, maxMs: 20, multiplier: 1, jitter: 0 } } };

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
