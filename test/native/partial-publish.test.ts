/**
 * `backpressure: 'block'` when publishTimeoutMs runs out part-way through a unit: the ring took the unit's
 * first events and not the rest. Each publish settles with its own event's fate, and publishMany's
 * PublishPartialError names exactly the events not written: a caller that publishes those again gets every
 * event delivered once, with no duplicate of one that was written (the written ones are never reported
 * failed).
 */
import { describe, expect, it } from 'vitest';
import { ClosedError, PublishPartialError, TimeoutError } from '../../src/index.js';
import { nativeBuses, ticks, type Bus } from './harness.js';

const range = (from: number, to: number) => Array.from({ length: to - from }, (_, i) => from + i);
const sorted = (a: number[]) => [...a].sort((x, y) => x - y);

/** A main-thread consumer group whose handler waits until released, so its ring (capacity 2) fills. */
async function stalled(b: Bus, group: string) {
  let release!: () => void;
  const gate = new Promise<void>((r) => (release = r));
  const seen: number[] = [];
  await b.subscribe('tick', { group }, async (e) => {
    seen.push(e.data.seq);
    await gate;
  });
  return { seen, release };
}

describe.each(['native', 'js'] as const)('native block: a unit written in part (%s)', (implementation) => {
  const bus = nativeBuses(implementation, 'partial-publish');
  const blocking = { capacity: 2, backpressure: 'block', publishTimeoutMs: 200, partitions: 1 };

  it('publishMany rejects with PublishPartialError naming the events not written; those written are delivered, once', async () => {
    const b = await bus(blocking);
    const slow = await stalled(b, 'slow');
    const err = await b.publishMany('tick', ticks(10)).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(PublishPartialError);
    const e = err as PublishPartialError;
    expect(e.accepted).toBeGreaterThanOrEqual(2); // the empty ring took at least its capacity
    expect(e.accepted).toBeLessThan(10);
    expect(e.failed).toEqual(range(e.accepted, 10));
    expect(e.errors[0]).toBeInstanceOf(TimeoutError);
    // The caller publishes the failed ones again, as the README shows; nothing is delivered twice.
    slow.release();
    await b.publishMany(
      'tick',
      e.failed.map((i) => ({ seq: i })),
    );
    await b.idle({ timeoutMs: 5_000 });
    expect(sorted(slow.seen)).toEqual(range(0, 10));
  });

  it('publish(): the promises of the written events resolve, the others reject with TimeoutError', async () => {
    const b = await bus(blocking);
    const slow = await stalled(b, 'slow');
    const settled = await Promise.allSettled(ticks(10).map((t) => b.publish('tick', t))); // one unit
    const written = range(0, 10).filter((i) => settled[i]!.status === 'fulfilled');
    expect(written.length).toBeGreaterThanOrEqual(2);
    expect(written.length).toBeLessThan(10);
    expect(written).toEqual(range(0, written.length)); // a prefix: the ring takes a unit in order
    for (const s of settled.slice(written.length)) expect((s as PromiseRejectedResult).reason).toBeInstanceOf(TimeoutError);
    expect(b.stats().failedEvents).toBe(10 - written.length);
    slow.release();
    await b.idle({ timeoutMs: 5_000 });
    expect(sorted(slow.seen)).toEqual(written);
  });

  it('two groups: what counts as written is what the slower group took; the other group got the unit whole', async () => {
    const b = await bus(blocking);
    const fast: number[] = [];
    await b.subscribe('tick', { group: 'fast' }, (e) => void fast.push(e.data.seq));
    const slow = await stalled(b, 'slow');
    const e = (await b.publishMany('tick', ticks(10)).then(
      () => undefined,
      (x: unknown) => x,
    )) as PublishPartialError;
    expect(e).toBeInstanceOf(PublishPartialError);
    slow.release();
    await b.idle({ timeoutMs: 5_000 });
    expect(sorted(slow.seen)).toEqual(range(0, e.accepted));
    expect(sorted(fast)).toEqual(range(0, 10));
  });

  it('a group created later (startFrom 0) replays only the events written, so republishing the failed ones delivers each once', async () => {
    const b = await bus(blocking);
    const slow = await stalled(b, 'slow');
    const before = (await b.publishMany('tick', ticks(10)).then(
      () => undefined,
      (x: unknown) => x,
    )) as PublishPartialError;
    expect(before).toBeInstanceOf(PublishPartialError);
    slow.release();
    await b.idle({ timeoutMs: 5_000 });
    await b.publishMany(
      'tick',
      before.failed.map((i) => ({ seq: i })),
    );
    await b.publish('tick', { seq: 10 });
    await b.idle({ timeoutMs: 5_000 });
    const late: number[] = [];
    await b.subscribe('tick', { group: 'late', startFrom: '0' }, (e) => void late.push(e.data.seq));
    await b.idle({ timeoutMs: 5_000 });
    expect(sorted(late)).toEqual(range(0, 11));
    // In history order: the written prefix, then the republished rest, then what came after.
    expect(late).toEqual([...range(0, before.accepted), ...before.failed, 10]);
  });

  it('keyed publish() and publishMany calls in one unit: each call counts as written the events of its own the ring took, in unit order', async () => {
    const b = await bus({ ...blocking, capacity: 16 });
    await (await b.subscribe('tick', { group: 'g' }, () => {})).close(); // the group stays and takes every event
    const key = { key: () => 'a' };
    await b.publishMany('tick', ticks(8), key); // 8 of 16 slots used
    // One tick, one lane, one unit: [call A 8..11][publish 12, 13][call B 14..23][publish 24, 25]; room for 8.
    const a = b.publishMany('tick', ticks(4, 8), key).then(
      () => undefined,
      (e: unknown) => e,
    );
    const singles = [12, 13].map((seq) => b.publish('tick', { seq }, { key: 'a' }));
    const bCall = b.publishMany('tick', ticks(10, 14), key).then(
      () => undefined,
      (e: unknown) => e,
    );
    const after = [24, 25].map((seq) => b.publish('tick', { seq }, { key: 'a' }));
    const single = await Promise.allSettled([...singles, ...after]);
    expect(await a).toBeUndefined();
    expect(single.map((s) => s.status)).toEqual(['fulfilled', 'fulfilled', 'rejected', 'rejected']);
    const e = (await bCall) as PublishPartialError;
    expect(e).toBeInstanceOf(PublishPartialError);
    expect(e.failed).toEqual(range(2, 10));
    expect(e.accepted).toBe(2);
    const got: number[] = [];
    await b.subscribe('tick', { group: 'g' }, (ev) => void got.push(ev.data.seq));
    await b.idle({ timeoutMs: 5_000 });
    // Delivered: exactly what was reported written.
    expect(sorted(got)).toEqual([...range(0, 14), 14, 15]);
  });

  it("close() with publishes waiting for room only the bus's own stuck handler could make: bounded by drainTimeoutMs, they reject with ClosedError", async () => {
    const b = await bus({ ...blocking, publishTimeoutMs: 30_000 }, { drainTimeoutMs: 200 });
    await b.subscribe('tick', { group: 'stuck' }, () => new Promise<void>(() => {}));
    const settled = Promise.allSettled(ticks(10).map((t) => b.publish('tick', t)));
    const many = b.publishMany('tick', ticks(5, 10)).then(
      () => undefined,
      (e: unknown) => e,
    );
    await new Promise((r) => setTimeout(r, 50));
    const started = Date.now();
    await b.close();
    // Not publishTimeoutMs (30 s): drainTimeoutMs for the publishes, then for the handler.
    expect(Date.now() - started).toBeLessThan(2_000);
    const results = await settled;
    const rejected = results.flatMap((r) => (r.status === 'rejected' ? [r.reason] : []));
    expect(rejected.length).toBeGreaterThan(0);
    for (const reason of rejected) expect(reason).toBeInstanceOf(ClosedError);
    const m = await many; // queued behind the blocked ring: nothing of it written (else partial, for want of the rest)
    expect(m instanceof ClosedError || (m instanceof PublishPartialError && m.cause instanceof ClosedError)).toBe(true);
  });
});
