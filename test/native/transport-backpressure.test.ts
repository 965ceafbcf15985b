/** The native transport's backpressure strategies (drop-newest, drop-oldest, error, block) and tryPublish on a full ring. */
import { describe, expect, it } from 'vitest';
import { BackpressureError, PublishPartialError, TimeoutError } from '../../src/index.js';
import { RecordedSettlement } from '../helpers/settlement.js';
import { sleep, waitFor } from '../helpers/wait.js';
import { nativeBuses, ticks, transportOf, type Bus } from './harness.js';

describe.each(['native', 'js'] as const)('native transport (%s)', (implementation) => {
  const bus = nativeBuses(implementation, 'native-test');

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
});
