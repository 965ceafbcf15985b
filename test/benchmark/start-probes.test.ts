/**
 * The delivery-order probe of the native latency runs: worker handlers that only store their start
 * times are matched to events by partition order, and any break in that order, a lost or an extra
 * event, or two workers on one partition, is reported instead of being measured. The worker side is
 * simulated here exactly as benchmarking/workers/start-time-handler.mjs writes it.
 */
import { describe, expect, it } from 'vitest';
import { OrderProbe } from '../../benchmarking/lib/start-probes.js';
import type { TickPayload } from '../../benchmarking/lib/payload.js';

interface Shared {
  slots: SharedArrayBuffer;
  times: SharedArrayBuffer;
  counts: SharedArrayBuffer;
  ids: SharedArrayBuffer;
  cap: number;
}

/** One simulated worker thread: claims a slot as setup() does, then handles events as handler() does. */
function worker(shared: Shared) {
  const slot = Atomics.add(new Int32Array(shared.slots), 0, 1);
  const times = new Float64Array(shared.times);
  const ids = new Int32Array(shared.ids);
  const counts = new Int32Array(shared.counts);
  let n = 0;
  return (id: number, startNs: number) => {
    const k = n++;
    times[slot * shared.cap + k] = startNs;
    if ((k & 15) === 0) ids[slot * (shared.cap >> 4) + (k >> 4)] = id;
    Atomics.store(counts, slot * 16, n);
  };
}

/** An order probe for `workers` workers (capacity `cap`) and the simulated workers that write into it. */
function probeWith(workers: number, cap: number) {
  const probe = new OrderProbe(workers, cap, 0);
  const shared = probe.workerData as unknown as Shared;
  return { probe, handle: Array.from({ length: workers }, () => worker(shared)) };
}

const payloads = (n: number): TickPayload[] => Array.from({ length: n }, (_, i) => ({ id: i, sym: 'AAPL', px: 150.25, qty: 100, t: 1000 * i }));

/** Delivers `events` ids round-robin after `before` earlier events; `owner[p]` is the worker of partition p. */
function deliver(handle: ((id: number, ns: number) => void)[], owner: number[], before: number, ids: number[], latencyNs: (id: number) => number) {
  for (const id of ids) handle[owner[(before + id) % owner.length]!]!(id, 1000 * id + latencyNs(id));
}

describe('OrderProbe (no-op worker handler, delivery-order matching)', () => {
  it('matches every start to its event across phases, whichever worker took which partition', () => {
    const P = 4;
    const n = 1003;
    const { probe, handle } = probeWith(P, 200 + n);
    const owner = [2, 0, 3, 1];
    // A warm-up phase of 200 events (ids after the measured ones), then the measured one.
    probe.phase(0);
    deliver(
      handle,
      owner,
      0,
      Array.from({ length: 200 }, (_, i) => i),
      () => 5,
    );
    expect(probe.done()).toBe(200);
    probe.phase(200);
    const sent = payloads(n);
    const ids = sent.map((p) => p.id);
    deliver(handle, owner, 200 - 0, ids, (id) => 10_000 + (id % 7) * 1000);
    const got = probe.collect(sent);
    expect(got.notes).toEqual([]);
    expect(got.received).toBe(n);
    expect(got.unique).toBe(n);
    expect(got.unmatched).toBe(0);
    const s = got.rec.summary('closed');
    expect(s.count).toBe(n);
    expect(s.minUs).toBeCloseTo(10, 1);
    expect(s.maxUs).toBeCloseTo(16, 1);
  });

  it('reports a break in partition order and leaves that worker unmeasured', () => {
    const { probe, handle } = probeWith(2, 400);
    probe.phase(0);
    const sent = payloads(400);
    const ids = sent.map((p) => p.id);
    // Partition 0 gets ids 0, 2, 4, ...; swap its 16th and 17th events (ids 32 and 34): position 16 is sampled.
    [ids[32], ids[34]] = [ids[34]!, ids[32]!];
    deliver(handle, [0, 1], 0, ids, () => 1);
    const got = probe.collect(sent);
    expect(got.received).toBe(400);
    expect(got.unique).toBe(200);
    // worker 0's 200 starts: delivered, but not matched to their publishes (not duplicates)
    expect(got.unmatched).toBe(200);
    expect(got.notes).toHaveLength(1);
    expect(got.notes[0]).toMatch(/worker 0: event 16 of partition 0 is id 34, expected 32/);
    expect(got.rec.summary('closed').count).toBe(200);
  });

  it("reports a lost event and a duplicated one by their partitions' counts", () => {
    const { probe, handle } = probeWith(2, 400);
    probe.phase(0);
    const sent = payloads(100);
    const ids = sent.map((p) => p.id).filter((id) => id !== 51); // partition 1 loses one
    ids.push(98); // partition 0 gets one twice, at its end
    deliver(handle, [0, 1], 0, ids, () => 1);
    const got = probe.collect(sent);
    expect(got.received).toBe(100);
    expect(got.unique).toBe(0);
    expect(got.unmatched).toBe(100);
    expect(got.notes.join('\n')).toMatch(/worker 0: 51 events where partition 0 got 50/);
    expect(got.notes.join('\n')).toMatch(/worker 1: 49 events where partition 1 got 50/);
  });

  it('reports two workers on one partition', () => {
    const { probe, handle } = probeWith(2, 100);
    probe.phase(0);
    const sent = payloads(64);
    // Both halves of partition 0 (ids 0..62, even) go to different workers; partition 1 is not delivered.
    const even = sent.map((p) => p.id).filter((id) => id % 2 === 0);
    for (const id of even.slice(0, 16)) handle[0]!(id, 1000 * id + 1);
    for (const id of even.slice(16)) handle[1]!(id, 1000 * id + 1);
    const got = probe.collect(sent);
    expect(got.unique).toBeLessThan(32);
    expect(got.notes.join('\n')).toMatch(/partition 0/);
  });
});
