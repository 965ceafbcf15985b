import { describe, expect, it } from 'vitest';
import { BackpressureError, ClosedError, ConfigError, NativeError, PayloadTooLargeError, PublishPartialError, TimeoutError } from '../../src/index.js';
import { currentThreadCpus } from '../../transports/native/index.js';
import { RecordedSettlement } from '../helpers/settlement.js';
import { sleep, waitFor } from '../helpers/wait.js';
import { errorLog, fixture, nativeBuses, ticks, transportOf, type Bus } from './harness.js';

/** The CPUs this thread may run on that fit a 31-bit mask (the affinity fixture's). */
const maskableCpus = () => currentThreadCpus()!.filter((c) => c < 31);
const fast = { retry: { backoff: { initialMs: 10, maxMs: 20 } } };

describe.each(['native', 'js'] as const)('native transport (%s)', (implementation) => {
  const bus = nativeBuses(implementation, 'native-test');

  it('uses the requested implementation', async () => {
    const b = await bus();
    expect(transportOf(b).implementation).toBe(implementation);
  });

  it('rejects bad partition counts and capacities with ConfigError naming the field', async () => {
    await expect(bus({ partitions: 0 })).rejects.toBeInstanceOf(ConfigError);
    await expect(bus({ capacity: 1 })).rejects.toThrow(/capacity/);
    await expect(bus({ backpressure: 'sometimes' })).rejects.toThrow(/backpressure/);
    const b = await bus({ capacity: 1000 });
    expect(transportOf(b).core.capacity).toBe(1024);
  });

  // A consumer holding one event (its pops take a quarter of a 4-event ring: one; handler stuck) so the ring fills.
  async function stuckConsumer(b: Bus) {
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    const seen: number[] = [];
    await b.subscribe('tick', { group: 'g' }, async (e) => {
      seen.push(e.data.seq);
      await gate;
    });
    return { seen, release };
  }

  it('drop-newest: accepts what fits and counts the rest exactly', async () => {
    const b = await bus({ capacity: 4, backpressure: 'drop-newest' });
    const { seen, release } = await stuckConsumer(b);
    await b.publishMany('tick', ticks(10));
    expect(transportOf(b).stats('tick', 0, 'g')).toMatchObject({ pushed: 4, droppedNewest: 6 });
    release();
    await waitFor(() => seen.length === 4, 5000, '4 events');
    expect(seen).toEqual([0, 1, 2, 3]);
  });

  it('drop-oldest: keeps the newest and counts evictions exactly', async () => {
    const b = await bus({ capacity: 4, backpressure: 'drop-oldest' });
    const { seen, release } = await stuckConsumer(b);
    await b.publishMany('tick', ticks(10));
    expect(transportOf(b).stats('tick', 0, 'g')).toMatchObject({ pushed: 10, droppedOldest: 6 });
    release();
    await waitFor(() => seen.length === 4, 5000, '4 events');
    expect(seen).toEqual([6, 7, 8, 9]);
  });

  it('error: rejects a unit that does not fit with BackpressureError, counted as rejected', async () => {
    const b = await bus({ capacity: 4, backpressure: 'error' });
    const { seen, release } = await stuckConsumer(b);
    await b.publishMany('tick', ticks(3, 100));
    await waitFor(() => seen.length === 1, 5000, 'the first event popped'); // 2 left in the ring: room for 2
    await expect(b.publishMany('tick', ticks(3))).rejects.toBeInstanceOf(BackpressureError);
    expect(transportOf(b).stats('tick', 0, 'g')).toMatchObject({ pushed: 3, rejected: 3 });
    await b.publishMany('tick', ticks(2, 200));
    release();
    await waitFor(() => seen.length === 5, 5000, '5 events');
    expect(seen).toEqual([100, 101, 102, 200, 201]);
  });

  it('error: a burst of publish() calls into an empty ring is taken as far as the ring holds (no unit is larger than the ring)', async () => {
    const b = await bus({ capacity: 4, backpressure: 'error' });
    const { seen, release } = await stuckConsumer(b);
    // One tick: the batcher makes no unit larger than the ring of 4, so an empty ring takes the first 4.
    const results = await Promise.allSettled(ticks(10).map((t) => b.publish('tick', t)));
    expect(results.map((r) => r.status)).toEqual([...Array(4).fill('fulfilled'), ...Array(6).fill('rejected')]);
    for (const r of results.slice(4)) expect((r as PromiseRejectedResult).reason).toBeInstanceOf(BackpressureError);
    release();
    await waitFor(() => seen.length === 4, 5000, '4 events');
    expect(seen).toEqual([0, 1, 2, 3]);
    // By bytes too: an arena of 64 KiB takes units of at most a quarter of it.
    const big = await bus({ capacity: 512, backpressure: 'error' }, { batching: { maxEvents: 4000 } });
    const held = await stuckConsumer(big); // holds the first event: the ring fills
    const pad = 'x'.repeat(1000);
    // 200 events of ~1 KB in one tick, more than the arena: not one unit refused whole.
    const settled = await Promise.allSettled(ticks(200).map((t) => big.publish('tick', { ...t, pad })));
    const accepted = settled.filter((r) => r.status === 'fulfilled').length;
    expect(accepted).toBeGreaterThan(0);
    expect(settled.slice(0, accepted).every((r) => r.status === 'fulfilled')).toBe(true);
    expect(transportOf(big).stats('tick', 0, 'g')).toMatchObject({ pushed: accepted, rejected: 200 - accepted });
    held.release();
    await waitFor(() => held.seen.length === accepted, 5000, 'the accepted events');
  });

  it('error: a publishMany of several units the ring takes part of rejects with PublishPartialError naming the refused payloads', async () => {
    const b = await bus({ capacity: 4, backpressure: 'error' }, { batching: { maxEvents: 2 } });
    const { seen, release } = await stuckConsumer(b);
    const err = await b.publishMany('tick', ticks(10)).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(PublishPartialError);
    expect(err).toMatchObject({ failed: [4, 5, 6, 7, 8, 9], accepted: 4, retryable: true });
    expect((err as PublishPartialError).cause).toBeInstanceOf(BackpressureError);
    expect(transportOf(b).stats('tick', 0, 'g')).toMatchObject({ pushed: 4, rejected: 6 });
    release();
    await waitFor(() => seen.length === 4, 5000, '4 events');
    expect(seen).toEqual([0, 1, 2, 3]);
  });

  it('block: waits for room without freezing the event loop, and loses nothing', async () => {
    const b = await bus({ capacity: 8, backpressure: 'block' });
    const seen: number[] = [];
    await b.subscribe('tick', { group: 'g' }, async (e) => {
      seen.push(e.data.seq);
      await sleep(0);
    });
    let ticksOfLoop = 0;
    const timer = setInterval(() => ticksOfLoop++, 1);
    await b.publishMany('tick', ticks(500));
    clearInterval(timer);
    await waitFor(() => seen.length === 500, 10_000, '500 events');
    expect(seen).toEqual(ticks(500).map((t) => t.seq));
    expect(ticksOfLoop).toBeGreaterThan(0);
  });

  it('block: keeps partition order when one write carries several units of a full ring', async () => {
    const b = await bus({ capacity: 4, backpressure: 'block' });
    const seen: number[] = [];
    await b.subscribe('tick', { group: 'g' }, async (e) => {
      seen.push(e.data.seq);
      await sleep(0);
    });
    const ev = (seq: number) => ({
      id: `01JABCDEFGHJKMNPQRSTVW${String(seq).padStart(4, '0')}`,
      type: 'tick',
      time: Date.now(),
      key: undefined,
      data: { seq },
      json: JSON.stringify({ seq }),
      partition: 0,
      correlationId: undefined,
      causationId: undefined,
      headers: undefined,
    });
    const unit = (from: number, n: number) => ({ type: 'tick', partition: 0, events: Array.from({ length: n }, (_, i) => ev(from + i)), bytes: 0 });
    const settle = new RecordedSettlement();
    const result = await transportOf(b).write([unit(0, 10), unit(10, 10), unit(20, 10)], settle);
    expect(result ?? []).toEqual(expect.not.arrayContaining([expect.any(Error)]));
    expect(settle.failures).toEqual([]);
    await waitFor(() => seen.length === 30, 10_000, '30 events');
    expect(seen).toEqual(Array.from({ length: 30 }, (_, i) => i));
  });

  it('block: rejects after publishTimeoutMs when nobody consumes, naming the events the ring did not take (TimeoutError)', async () => {
    const b = await bus({ capacity: 4, backpressure: 'block', publishTimeoutMs: 100 });
    const { release } = await stuckConsumer(b);
    const err = await b.publishMany('tick', ticks(10)).then(
      () => undefined,
      (e: unknown) => e,
    );
    release();
    // The ring (and the handler) took the first events: the call was written in part.
    expect(err).toBeInstanceOf(PublishPartialError);
    expect((err as PublishPartialError).errors[0]).toBeInstanceOf(TimeoutError);
    expect((err as PublishPartialError).failed.at(-1)).toBe(9);
    await expect(b.publish('tick', { seq: 10 })).resolves.toBeUndefined(); // released: room again
  });

  it('block: publishes queued behind others waiting for room each time out publishTimeoutMs after they were written, not one after another', async () => {
    const b = await bus({ capacity: 4, backpressure: 'block', publishTimeoutMs: 200 });
    const { release } = await stuckConsumer(b);
    await b.publishMany('tick', ticks(5)); // one held by the handler, 4 fill the ring
    const t0 = Date.now();
    const settled: number[] = [];
    const pubs: Promise<unknown>[] = [];
    for (let i = 0; i < 12; i++) {
      // Each its own write (a macrotask apart), queued behind the one before in the full ring.
      pubs.push(b.publish('tick', { seq: 5 + i }).catch((err: unknown) => (settled.push(Date.now() - t0), err)));
      await new Promise((r) => setImmediate(r));
    }
    const errors = await Promise.all(pubs);
    expect(errors.every((e) => e instanceof TimeoutError)).toBe(true);
    // One timeout after the last write, give or take a slow machine; were they added up: 12 x 200 ms.
    expect(Math.max(...settled)).toBeLessThan(1200);
    release();
  });

  it('tryPublish: takes events while the partition has room, then reports full and sends nothing', async () => {
    const b = await bus({ capacity: 4, backpressure: 'block' });
    const { seen, release } = await stuckConsumer(b);
    // A synchronous loop: the consumer does not pop meanwhile, so the ring takes 4.
    const results = Array.from({ length: 10 }, (_, i) => b.tryPublish('tick', { seq: i }));
    expect(results).toEqual([true, true, true, true, false, false, false, false, false, false]);
    expect(transportOf(b).stats('tick', 0, 'g')).toMatchObject({ pushed: 4, rejected: 0, droppedNewest: 0, droppedOldest: 0 });
    expect(b.stats()).toMatchObject({ events: 4, pendingEvents: 0 });
    expect(() => b.tryPublish('tick', { seq: 'x' } as never)).toThrow(/Invalid payload/);
    release();
    await waitFor(() => seen.length === 4, 5000, '4 events');
    expect(b.tryPublish('tick', { seq: 4 })).toBe(true);
    await waitFor(() => seen.length === 5, 5000, 'the fifth');
    expect(seen).toEqual([0, 1, 2, 3, 4]);
  });

  it('tryPublish: does not overtake events still waiting for room, whatever the strategy', async () => {
    const b = await bus({ capacity: 4, backpressure: 'block' });
    const { seen, release } = await stuckConsumer(b);
    const waiting = b.publishMany('tick', ticks(6)); // 4 in the ring, 2 waiting for room
    await sleep(20);
    expect(b.tryPublish('tick', { seq: 100 })).toBe(false);
    release();
    await waiting;
    await waitFor(() => seen.length === 6, 5000, '6 events');
    expect(b.tryPublish('tick', { seq: 101 })).toBe(true);
    await waitFor(() => seen.length === 7, 5000, 'the seventh');
    expect(seen).toEqual([0, 1, 2, 3, 4, 5, 101]);
    const dropping = await bus({ capacity: 4, backpressure: 'drop-oldest' });
    const stuck = await stuckConsumer(dropping);
    expect(Array.from({ length: 6 }, (_, i) => dropping.tryPublish('tick', { seq: i }))).toEqual([true, true, true, true, false, false]);
    expect(transportOf(dropping).stats('tick', 0, 'g')).toMatchObject({ pushed: 4, droppedOldest: 0 });
    stuck.release();
  });

  it('round-trips non-ASCII payloads, keys, correlation ids and headers', async () => {
    const b = await bus({ partitions: 2 });
    const got: unknown[] = [];
    await b.subscribe('tick', { group: 'u' }, (e) => void got.push({ data: e.data, key: e.key, correlationId: e.correlationId, headers: e.headers }));
    await b.publish('tick', { seq: 1, pad: 'é😀日本\n"' }, { key: 'ключ', correlationId: 'c-1', headers: { traceparent: 'ü' } });
    await b.publish('tick', { seq: 2 });
    await waitFor(() => got.length === 2, 5000, 'two events');
    expect(got).toContainEqual({ data: { seq: 1, pad: 'é😀日本\n"' }, key: 'ключ', correlationId: 'c-1', headers: { traceparent: 'ü' } });
    expect(got).toContainEqual({ data: { seq: 2 }, key: undefined, correlationId: undefined, headers: undefined });
  });

  it('rejects an oversized payload with PayloadTooLargeError and sends nothing', async () => {
    const b = await bus({ capacity: 16 });
    expect(b.transport.capabilities.maxEventBytes).toBe(1024 * 1024);
    await expect(b.publish('tick', { seq: 1, pad: 'x'.repeat(1024 * 1024) })).rejects.toBeInstanceOf(PayloadTooLargeError);
  });

  it('sizes the ring arena for maxEventBytes: four of the largest event', async () => {
    const b = await bus({ capacity: 16, maxEventBytes: 20_000 });
    expect(b.transport.capabilities.maxEventBytes).toBe(20_000);
    expect(transportOf(b).core.arenaBytes).toBe(131_072); // 80,000 rounded up to a power of two
    await b.subscribe('tick', { group: 'g' }, () => {});
    await b.publish('tick', { seq: 1, pad: 'x'.repeat(19_000) });
    await expect(b.publish('tick', { seq: 2, pad: 'x'.repeat(20_000) })).rejects.toBeInstanceOf(PayloadTooLargeError);
  });

  it('refuses a maxEventBytes above the arena of the broker it shares with a ConfigError naming both, rather than capping it', async () => {
    const first = await bus({ capacity: 16, maxEventBytes: 16_384 });
    const name = transportOf(first).config.name;
    await expect(bus({ capacity: 16, maxEventBytes: 20_000, name })).rejects.toThrow(ConfigError);
    await expect(bus({ capacity: 16, maxEventBytes: 20_000, name })).rejects.toThrow(/maxEventBytes 20000 .*65536 bytes: at most 16384.*give that one a maxEventBytes of at least 20000/);
    const b = await bus({ capacity: 16, maxEventBytes: 16_384, name });
    expect(b.transport.capabilities.maxEventBytes).toBe(16_384);
    // Unset, a bus sharing the broker takes what the broker's arena holds.
    const c = await bus({ capacity: 16, name });
    expect(c.transport.capabilities.maxEventBytes).toBe(16_384);
  });

  it('a maxEventBytes above 64 MiB is a ConfigError (its arena would pass 256 MiB, and a pop of a fuller ring could outgrow a JavaScript string)', async () => {
    await expect(bus({ maxEventBytes: 2 ** 26 + 1 })).rejects.toThrow(/transport\.maxEventBytes: must be at most 67108864 \(64 MiB\)/);
  });

  if (implementation === 'native') {
    it('the 4,097th group alive at once in a transport is a NativeError that says why and what to do', async () => {
      const b = await bus({ capacity: 2, maxEventBytes: 256 });
      const t = transportOf(b) as unknown as { createLane(group: string, partitions: number): number };
      const err = await (async () => {
        for (let i = 0; i <= 4096; i++) t.createLane(`g${i}`, 1);
      })().catch((e: unknown) => e);
      expect(err).toBeInstanceOf(NativeError);
      expect((err as Error).message).toMatch(/has 4096 groups alive at once.*deleteGroup.*reuse group names/);
    });
  }

  it('rejects an event whose headers make it larger than maxEventBytes with PayloadTooLargeError', async () => {
    const b = await bus({ capacity: 16, maxEventBytes: 16_384 });
    await b.subscribe('tick', { group: 'g' }, () => {});
    await expect(b.publish('tick', { seq: 1 }, { headers: { big: 'x'.repeat(40_000) } })).rejects.toBeInstanceOf(PayloadTooLargeError);
    await b.publish('tick', { seq: 2 });
  });

  it('rejects publish after close with ClosedError', async () => {
    const b = await bus();
    await b.close();
    await expect(b.publish('tick', { seq: 1 })).rejects.toBeInstanceOf(ClosedError);
  });

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

  it('worker consumers: a thread that dies is replaced, and what it held is delivered again: nothing lost', async () => {
    const { errors, logger } = errorLog();
    const b = await bus({ partitions: 1 }, { logger });
    const counters = new SharedArrayBuffer(12);
    const seen = new Int32Array(new SharedArrayBuffer(4 * 1100));
    await b.subscribe('tick', { group: 'crash', workers: 1, handler: fixture('crash-handler.mjs'), workerData: { counters, seen: seen.buffer, crashAt: 100 } });
    await b.publishMany('tick', ticks(300));
    await waitFor(() => errors.some((e) => /go to the group's other threads; starting a new thread/.test(e.msg)), 10_000, 'the crash to be logged');
    const recovered = errors.find((e) => /other threads/.test(e.msg))!.obj['recovered'] as number;
    // The thread died on seq 100 holding it and everything after (one popped batch); of what it finished
    // before, all but the last unacknowledged stretch (< 64 events) had been acknowledged.
    expect(recovered).toBeGreaterThanOrEqual(200);
    expect(recovered).toBeLessThan(200 + 64);
    await waitFor(() => seen.subarray(0, 300).every((x) => x >= 1), 10_000, 'every event delivered');
    // Events published after the crash reach the new thread.
    await b.publishMany('tick', ticks(100, 1000));
    await waitFor(() => seen.subarray(1000, 1100).every((x) => x === 1), 10_000, 'events after the crash');
    expect(seen.subarray(0, 300).filter((x) => x > 1).length).toBeLessThan(64); // redelivered: the unacknowledged stretch
  });

  it('worker consumers under drop-oldest: a thread that dies is replaced, what it had popped is reported lost, and its ring keeps flowing', async () => {
    const { errors, logger } = errorLog();
    const b = await bus({ partitions: 1, backpressure: 'drop-oldest' }, { logger });
    const counters = new SharedArrayBuffer(12);
    const seen = new Int32Array(new SharedArrayBuffer(4 * 1100));
    await b.subscribe('tick', { group: 'crash', workers: 1, handler: fixture('crash-handler.mjs'), workerData: { counters, seen: seen.buffer, crashAt: 100 } });
    await b.publishMany('tick', ticks(300));
    await waitFor(() => errors.some((e) => /starting a new thread/.test(e.msg)), 10_000, 'the crash to be logged');
    const died = errors.find((e) => /starting a new thread/.test(e.msg))!;
    // The records it popped left the ring when they were counted: seq 100 and the rest of its batch are lost,
    // and said to be (up to: the count is an upper bound), none handed back.
    expect(died.msg).toMatch(/up to \d+ event\(s\) it held are lost/);
    expect(died.obj['recovered']).toBe(0);
    expect(died.obj['lost']).toBeGreaterThanOrEqual(1);
    expect(seen[100]).toBe(0);
    await b.publishMany('tick', ticks(100, 1000));
    await waitFor(() => seen.subarray(1000, 1100).every((x) => x === 1), 10_000, 'events after the crash');
    await b.idle({ timeoutMs: 10_000 });
    const t = transportOf(b).totals('tick');
    expect({ size: t.size, held: t.held }).toEqual({ size: 0, held: 0 });
  });

  it('worker consumers: an event waiting for a retry when its thread dies is delivered by the next one', async () => {
    const b = await bus({ partitions: 1 }, { logger: errorLog().logger });
    const seen = new Int32Array(new SharedArrayBuffer(4 * 40));
    const flags = new SharedArrayBuffer(4);
    const slowRetry = { retry: { backoff: { initialMs: 5_000, maxMs: 5_000 } } };
    await b.subscribe('tick', { group: 'parked', workers: 1, ...slowRetry, handler: fixture('retry-then-crash.mjs'), workerData: { seen: seen.buffer, flags, failAt: 3, crashAt: 20 } });
    await b.publishMany('tick', ticks(40));
    // seq 3 waits 5 s for its retry in the thread that dies on seq 20; the new thread delivers it at once.
    await waitFor(() => seen.every((x) => x >= 1), 4_000, 'every event, the parked retry included');
    expect(seen[3]).toBe(1);
  });

  it('worker consumers: an event that kills every thread that takes it is dead-lettered after maxDeliveries', async () => {
    const { errors, logger } = errorLog();
    const b = await bus({ partitions: 1 }, { logger });
    const counters = new SharedArrayBuffer(12);
    const seen = new Int32Array(new SharedArrayBuffer(4 * 50));
    await b.subscribe('tick', { group: 'poison', workers: 1, maxDeliveries: 3, handler: fixture('crash-handler.mjs'), workerData: { counters, seen: seen.buffer, crashAt: 7, crashTimes: 1000 } });
    await b.publishMany('tick', ticks(50));
    await waitFor(async () => (await b.transport.deadLetters!('tick', 'poison')).length === 1, 15_000, 'the poison event dead-lettered');
    const [dl] = await b.transport.deadLetters!('tick', 'poison');
    expect((dl!.event!.data as { seq: number }).seq).toBe(7);
    expect(dl!.error).toMatch(/ConsumerThreadDied/);
    await waitFor(() => seen.every((x, i) => (i === 7 ? x === 0 : x >= 1)), 10_000, 'every other event delivered');
    expect(errors.filter((e) => /died/.test(e.msg)).length).toBe(3);
  });

  it('worker consumers: failures are retried, then dead-lettered', async () => {
    const b = await bus({ partitions: 2 });
    const counters = new SharedArrayBuffer(8);
    const c = new Int32Array(counters);
    await b.subscribe('tick', { group: 'f', workers: 2, maxDeliveries: 3, ...fast, handler: fixture('flaky-handler.mjs'), workerData: { counters } });
    await b.publishMany('tick', ticks(30));
    await waitFor(async () => Atomics.load(c, 0) === 27 && (await b.transport.deadLetters!('tick', 'f')).length === 3, 10_000, 'retries and dead letters');
    const dead = await b.transport.deadLetters!('tick', 'f');
    expect(dead.map((d) => (d.event!.data as { seq: number }).seq).sort((x, y) => x - y)).toEqual([0, 10, 20]);
    expect(dead.every((d) => d.attempts === 3 && d.error.includes('poison'))).toBe(true);
  });

  it('worker consumers: cpus pins thread k to cpus[k % cpus.length]', async () => {
    const allowed = maskableCpus();
    const cpus = [allowed[allowed.length - 1]!, allowed[0]!];
    const b = await bus({ partitions: 3 });
    const counters = new Int32Array(new SharedArrayBuffer(4 * 5));
    await b.subscribe('tick', { group: 'pinned', workers: 3, cpus, handler: fixture('affinity-handler.mjs'), workerData: { counters: counters.buffer } });
    await b.publishMany('tick', ticks(300));
    await waitFor(() => Atomics.load(counters, 1) === 300, 5000, 'all 300 events in the pinned workers');
    // Slots are taken in start order, not thread order: compare as multisets.
    const masks = [2, 3, 4].map((i) => counters[i]!).sort();
    expect(masks).toEqual([cpus[0]!, cpus[1]!, cpus[0]!].map((c) => 1 << c).sort());
  });

  it('worker consumers: a replacement thread runs on the CPU of the thread it replaces', async () => {
    const allowed = maskableCpus();
    const cpu = allowed[allowed.length - 1]!;
    const b = await bus({ partitions: 1 }, { logger: errorLog().logger });
    const counters = new Int32Array(new SharedArrayBuffer(4 * 4));
    const flags = new Int32Array(new SharedArrayBuffer(4));
    await b.subscribe('tick', {
      group: 'pinned-crash',
      workers: 1,
      cpus: [cpu],
      handler: fixture('affinity-handler.mjs'),
      workerData: { counters: counters.buffer, flags: flags.buffer, crashAt: 10 },
    });
    await b.publishMany('tick', ticks(50));
    await waitFor(() => Atomics.load(counters, 0) === 2 && Atomics.load(counters, 1) >= 50, 10_000, 'a replacement thread delivering the rest');
    expect(Atomics.load(flags, 0)).toBeGreaterThanOrEqual(1);
    expect([counters[2], counters[3]]).toEqual([1 << cpu, 1 << cpu]);
  });

  it('cpus: only with workers, and a CPU the OS refuses rejects subscribe with ConfigError, losing nothing', async () => {
    const b = await bus({ partitions: 2 });
    await expect(b.subscribe('tick', { group: 'x', cpus: [0] }, () => {})).rejects.toThrow(/cpus.*workers/);
    await expect(b.subscribe('tick', { group: 'x', workers: 1, cpus: [-1], handler: fixture('count-handler.mjs') })).rejects.toBeInstanceOf(ConfigError);
    await b.publishMany('tick', ticks(50));
    const err = await b
      .subscribe('tick', { group: 'x', startFrom: '0', workers: 2, cpus: [1023], handler: fixture('count-handler.mjs'), workerData: { counters: new SharedArrayBuffer(12) } })
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ConfigError);
    expect((err as ConfigError).issues[0]!.path).toEqual(['cpus']);
    expect((err as Error).message).toMatch(/cpus: Cannot pin this thread to CPUs 1023: pthread_setaffinity_np: Invalid argument/);
    const seen = new Set<number>();
    await b.subscribe('tick', { group: 'x', startFrom: '0' }, (e) => void seen.add(e.data.seq));
    await waitFor(() => seen.size === 50, 5000, 'all 50 events in the group');
  });

  // (A native core needs the addon in every thread: only a JS core runs where it does not load.)
  if (implementation === 'js')
    it('cpus without the addon: the workers run unpinned, with one warning per group', async () => {
      const warnings: string[] = [];
      const base = errorLog().logger;
      const logger: typeof base = { ...base, warn: ((_: unknown, msg: string) => void warnings.push(msg)) as () => void, child: () => logger };
      const b = await bus({ partitions: 2 }, { logger });
      const counters = new Int32Array(new SharedArrayBuffer(4 * 4));
      // A worker thread takes its environment from process.env when it starts.
      process.env['EVENTLANE_NATIVE'] = '0';
      try {
        await b.subscribe('tick', { group: 'unpinned', workers: 2, cpus: [0], handler: fixture('affinity-handler.mjs'), workerData: { counters: counters.buffer } });
      } finally {
        delete process.env['EVENTLANE_NATIVE'];
      }
      await b.publishMany('tick', ticks(100));
      await waitFor(() => Atomics.load(counters, 1) === 100, 5000, 'all 100 events in the unpinned workers');
      expect(warnings.filter((w) => w.includes('cpus ignored'))).toHaveLength(1);
      // Both run where this thread may run (the process's CPUs), not on CPU 0 alone.
      const mask = maskableCpus().reduce((m, c) => m | (1 << c), 0);
      expect([counters[2], counters[3]]).toEqual([mask, mask]);
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
