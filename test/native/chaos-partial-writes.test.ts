/**
 * Chaos under block with writes taken in part: keyed publish() and publishMany calls issued in one tick on tiny
 * rings with a short publishTimeoutMs, while the worker threads of the only group die and a slow member drains
 * the rings. Verdict: every event reported written (its call resolved, or a PublishPartialError does not name
 * it) is delivered, and no event reported not written is.
 */
import { describe, expect, it } from 'vitest';
import { sleep, waitFor } from '../helpers/wait.js';
import { prng } from '../helpers/prng.js';
import { errorLog, fixture, nativeBuses, transportOf, type Bus } from './harness.js';
import { count, derive, EXIT, fastRetry, keyOf, mainHandler, MAX_DELIVERIES, Publishers, RESOLVED, sab, SEED, SLOW, some, Tally, TIMED_OUT } from './chaos-harness.js';

/**
 * Keyed publish() calls around keyed publishMany calls, issued in one tick, so that the units of each lane mix
 * them in varying order; then the next tick, until `pubs` has no seqs left.
 */
async function mixedTicks(b: Bus, pubs: Publishers, r: () => number): Promise<void> {
  for (;;) {
    const parts = Array.from({ length: 1 + Math.floor(r() * 4) }, () => (r() < 0.5 ? 1 : 1 + Math.floor(r() * 24)));
    const seqs = pubs.alloc(parts.reduce((a, n) => a + n, 0));
    if (!seqs) return;
    let at = 0;
    for (const n of parts) {
      const mine = seqs.slice(at, (at += n));
      if (n === 1 && r() < 0.7) pubs.trackWritten(mine, b.publish('tick', { seq: mine[0]! }, { key: keyOf(mine[0]!) }));
      else
        pubs.trackWritten(
          mine,
          b.publishMany(
            'tick',
            mine.map((seq) => ({ seq })),
            { key: (d) => keyOf(d.seq) },
          ),
        );
    }
    await pubs.throttle(8);
    if (r() < 0.2) await sleep(1);
  }
}

describe.each(['native', 'js'] as const)('native transport chaos (%s)', (implementation) => {
  const open = nativeBuses(implementation, 'native-chaos');

  it('block, keyed publish() and publishMany calls in one tick, a worker group whose threads die: every event reported written is delivered, and no other', async () => {
    const seed = derive(`${implementation}:partial`);
    const rnd = prng(seed);
    const N = 4_000;
    const PARTITIONS = 2;
    const plan = sab(N);
    for (let s = 0; s < N; s++) plan[s] = rnd() < 0.1 ? SLOW : 0;
    // Six early seqs each end the thread that takes them. While a thread is replaced, and for good after the
    // sixth death in a minute (the crash-loop guard does not replace it), the group's rings fill.
    const exits = new Set<number>();
    while (exits.size < 6) exits.add(Math.floor(rnd() * 120));
    for (const s of exits) plan[s]! |= EXIT;
    const { logger } = errorLog();
    const b = await open({ partitions: PARTITIONS, capacity: 16, publishTimeoutMs: 60 }, { logger });
    const t = transportOf(b);
    const w = new Tally(N);
    const m = new Tally(N);
    const subOpts = { maxDeliveries: MAX_DELIVERIES, ...fastRetry };
    await b.subscribe('tick', { group: 'w', workers: 1, ...subOpts, handler: fixture('chaos-handler.mjs'), workerData: w.workerData(plan) });
    const pubs = new Publishers(N);
    const publishing = Promise.all([0, 1, 2, 3].map((id) => mixedTicks(b, pubs, prng(seed + 300 + id))));
    // Then a slow main-thread member drains the rings: room comes back a few events at a time, so writes
    // under block take part of a unit and time out on the rest.
    await waitFor(() => Atomics.load(w.flags, 0) >= exits.size || pubs.next >= N / 2, 20_000, 'the worker threads died');
    await b.subscribe('tick', { group: 'w', concurrency: 1, ...subOpts }, mainHandler(plan, m));
    await publishing;
    await pubs.settled(15_000);

    const written = (s: number) => pubs.is(s, RESOLVED);
    const handled = (s: number) => w.ok[s]! + m.ok[s]! > 0;
    const rings = Array.from({ length: PARTITIONS }, (_, p) => () => t.stats('tick', p, 'w')!);
    const ctx = `seed ${SEED}, ${implementation}, deaths ${Atomics.load(w.flags, 0)}`;
    try {
      await waitFor(() => rings.every((st) => st().size === 0 && st().held === 0) && count(N, (s) => written(s) && !handled(s)) === 0, 20_000, 'every event reported written handled');
    } catch (err) {
      throw new Error(`${(err as Error).message} (${ctx}): not handled ${some(N, (s) => written(s) && !handled(s))}; rings ${JSON.stringify(rings.map((st) => st()))}`);
    }
    await sleep(50);
    const summary = { seed: SEED, implementation, written: count(N, written), timedOut: count(N, (s) => pubs.is(s, TIMED_OUT)), deaths: Atomics.load(w.flags, 0) };
    console.log(`chaos block, partial units (${implementation}): ${JSON.stringify(summary)}`);
    expect(pubs.errors.map(String), `unexpected publish failures (${ctx})`).toEqual([]);
    expect(
      some(N, (s) => !written(s) && w.calls[s]! + m.calls[s]! > 0),
      `handled events reported not written (${ctx})`,
    ).toEqual([]);
    expect(
      rings.reduce((a, st) => a + st().pushed, 0),
      `events the rings took = events reported written (${ctx})`,
    ).toBe(summary.written);
    // The run did what it is for: the rings filled and writes timed out.
    expect(summary.timedOut, ctx).toBeGreaterThan(0);
    await b.close();
  }, 60_000);
});
