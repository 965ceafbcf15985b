/**
 * Chaos under block (the default strategy): 4 publishers mixing publish, publishMany and tryPublish, keyed or
 * not, on a bus sharing a named broker with a consumer bus. Group `w` runs a worker-thread handler module that
 * fails retryably (synchronously or by rejecting), is slow, dead-letters poison events, ends its thread on an
 * event's first delivery, and ends it on every delivery of a killer event (after an await, so with
 * concurrency > 1 other handlers run beside it when the thread dies); group `m` runs the same plan on the
 * main thread. Members of both groups are closed and reopened mid-stream, on either bus, and the publishing bus
 * is closed while its publishers still run.
 * Verdict: every event whose publish resolved is handled successfully by every group (exactly once, with
 * exactly the planned attempts, on the main thread; at least once on the workers, with duplicates and
 * attempt changes only around the threads that died), poison events and only those are dead-lettered after
 * maxDeliveries attempts (at once for a non-retryable failure), the killer in the worker group with
 * ConsumerThreadDied and no innocent event for a thread's death, publishes after close reject with
 * ClosedError, and each ring's counters add up: pushed = resolved = popped, nothing waiting or held.
 */
import { describe, expect, it } from 'vitest';
import { ClosedError } from '../../src/index.js';
import { sleep, uniqueName, waitFor } from '../helpers/wait.js';
import { prng } from '../helpers/prng.js';
import { errorLog, fixture, nativeBuses, transportOf, type Bus } from './harness.js';
import {
  ASYNC,
  CLOSED,
  count,
  derive,
  EXIT,
  FAILS,
  fastRetry,
  FATAL,
  keyOf,
  KILL,
  mainHandler,
  MAX_DELIVERIES,
  POISON,
  Publishers,
  RESOLVED,
  sab,
  SEED,
  SLOW,
  some,
  SYNC,
  Tally,
  TRY_FALSE,
} from './chaos-harness.js';

describe.each(['native', 'js'] as const)('native transport chaos (%s)', (implementation) => {
  const open = nativeBuses(implementation, 'native-chaos');

  it('block: publishers, worker and main-thread groups, failures, thread exits, members leaving and joining, the publishing bus closed mid-stream: every resolved event accounted for', async () => {
    const seed = derive(`${implementation}:block`);
    const rnd = prng(seed);
    const N = 12_000;
    const PARTITIONS = 4;

    // The plan: what each seq's handler does.
    const plan = sab(N);
    for (let s = 0; s < N; s++) {
      let p = 0;
      const f = rnd();
      if (f < 0.01) p |= POISON;
      else if (f < 0.015) p |= FATAL;
      else if (f < 0.3) p |= 1 + Math.floor(rnd() * 3); // 1..3 failures: success at attempt 2..4 (= maxDeliveries)
      if (rnd() < 0.5) p |= SYNC;
      if (rnd() < 0.5) p |= ASYNC;
      if (rnd() < 0.015) p |= SLOW;
      plan[s] = p;
    }
    // A worker thread ends itself on the first delivery of one seq, and on every delivery of another (the
    // killer), both early enough to be published. Threads die 1 + MAX_DELIVERIES times: the most a member
    // replaces in a minute (MAX_RESTARTS_PER_MINUTE in transports/native/thread-deaths.ts).
    const exits = new Set<number>();
    while (exits.size < 2) {
      const s = Math.floor(rnd() * N * 0.5);
      if ((plan[s]! & (POISON | FATAL)) === 0) exits.add(s);
    }
    const [exitSeq, killer] = [...exits] as [number, number];
    plan[exitSeq]! |= EXIT;
    plan[killer] = KILL | ASYNC;

    const name = uniqueName('chaos');
    const { errors, logger } = errorLog();
    const consumers = await open({ partitions: PARTITIONS, capacity: 64, name }, { logger, drainTimeoutMs: 5_000 });
    // Each death on the killer leaves its partition unconsumed until the replacement thread has loaded, so a
    // block publish there may wait for several thread loads in a row.
    const publisher = await open({ partitions: PARTITIONS, name, publishTimeoutMs: 30_000 }, { logger, drainTimeoutMs: 5_000 });
    const t = transportOf(consumers);

    const w = new Tally(N);
    const m = new Tally(N);
    const late = new Tally(N); // group `late`, created mid-stream with startFrom '0': the retained history, then the rest
    const wData = w.workerData(plan);
    const subOpts = { maxDeliveries: MAX_DELIVERIES, ...fastRetry };
    // Members that stay: W1 (2 threads, 3 handlers at once each) and M1. Members that come and go: W2 and M2.
    await consumers.subscribe('tick', { group: 'w', workers: 2, concurrency: 3, ...subOpts, handler: fixture('chaos-handler.mjs'), workerData: wData });
    await consumers.subscribe('tick', { group: 'm', concurrency: 4, ...subOpts }, mainHandler(plan, m));

    const pubs = new Publishers(N);
    let closing: Promise<void> | undefined;
    let closed = false;
    let closeMs = 0;
    const closeAt = Math.floor(N * (0.55 + rnd() * 0.3));
    const closePublisher = (): void => {
      if (closing) return;
      const t0 = Date.now();
      closing = publisher.close().then(() => {
        closeMs = Date.now() - t0;
        closed = true;
      });
    };
    const schedule: string[] = [];

    const publisherLoop = async (id: number): Promise<void> => {
      const r = prng(seed + 1000 + id);
      // While close() drains, publishing is still allowed (a draining handler's next event is sent): a few
      // calls then, which resolve or reject with ClosedError; then, once it has resolved, calls that must
      // all reject with ClosedError.
      let during = 0;
      let extra = 0;
      while (extra < 10) {
        if (pubs.next >= closeAt) closePublisher();
        if (closing && !closed && during++ >= 3) await closing;
        if (closed) extra++;
        const wasClosing = closed;
        if (wasClosing) pubs.afterClose++;
        else if (closing) pubs.duringClose++;
        const op = r();
        const keyed = r() < 0.5;
        if (op < 0.4) {
          const seqs = pubs.alloc(1 + Math.floor(r() * 40));
          if (!seqs) break;
          pubs.track(
            seqs,
            publisher.publishMany(
              'tick',
              seqs.map((seq) => ({ seq })),
              keyed ? { key: (d) => keyOf(d.seq) } : undefined,
            ),
            wasClosing,
          );
        } else if (op < 0.85 || exits.has(pubs.next)) {
          // The thread-ending events go by a publish that waits: a tryPublish that finds the rings full sends
          // nothing, and the deaths this test is about would not happen.
          const seqs = pubs.alloc(1);
          if (!seqs) break;
          pubs.track(seqs, publisher.publish('tick', { seq: seqs[0]! }, keyed ? { key: keyOf(seqs[0]!) } : undefined), wasClosing);
        } else {
          const seqs = pubs.alloc(1);
          if (!seqs) break;
          pubs.tryOne(seqs[0]!, () => publisher.tryPublish('tick', { seq: seqs[0]! }, keyed ? { key: keyOf(seqs[0]!) } : undefined), wasClosing);
        }
        await pubs.throttle(8);
        if (r() < 0.3) await sleep(Math.floor(r() * 3));
      }
      if (!closing) closePublisher();
    };

    // Chaos: members of both groups leave and join, on either bus, until publishing ends.
    let publishing = true;
    let w2: { close(): Promise<void> } | undefined;
    let m2: { close(): Promise<void> } | undefined;
    const subscribeFailures: unknown[] = [];
    const chaosLoop = async (): Promise<void> => {
      const r = prng(seed + 7);
      const on = (): Bus => (closing === undefined && r() < 0.5 ? publisher : consumers);
      // A subscribe on the publishing bus may meet its close(): ClosedError, then it goes to the consumer bus.
      const join = async <T>(f: (b: Bus) => Promise<T>): Promise<T> => {
        const b = on();
        try {
          return await f(b);
        } catch (err) {
          if (!(err instanceof ClosedError) || b === consumers) throw err;
          schedule.push('(closed: rejoin on the consumer bus)');
          return f(consumers);
        }
      };
      let lateJoined = false;
      while (publishing) {
        await sleep(10 + Math.floor(r() * 40));
        const a = r();
        try {
          if (!lateJoined && (a < 0.1 || pubs.next > closeAt * 0.5)) {
            // On the consumer bus: a member on the publishing bus would leave with it, and nobody would consume.
            schedule.push(`late (startFrom 0) @${pubs.next}`);
            lateJoined = true;
            await consumers.subscribe('tick', { group: 'late', startFrom: '0', concurrency: 2, ...subOpts }, mainHandler(plan, late));
          } else if (a < 0.45) {
            schedule.push(`m2 ${m2 ? 'reopen' : 'open'} @${pubs.next}`);
            await m2?.close();
            m2 = await join((b) => b.subscribe('tick', { group: 'm', concurrency: 1 + Math.floor(r() * 3), ...subOpts }, mainHandler(plan, m)));
          } else if (a < 0.8) {
            const workers = 1 + Math.floor(r() * 2);
            const concurrency = 1 + Math.floor(r() * 3);
            schedule.push(`w2 ${w2 ? 'reopen' : 'open'} (${workers} threads, concurrency ${concurrency}) @${pubs.next}`);
            await w2?.close();
            w2 = await join((b) => b.subscribe('tick', { group: 'w', workers, concurrency, ...subOpts, handler: fixture('chaos-handler.mjs'), workerData: wData }));
          } else if (a < 0.9 && m2) {
            schedule.push(`m2 close @${pubs.next}`);
            await m2.close();
            m2 = undefined;
          } else if (w2) {
            schedule.push(`w2 close @${pubs.next}`);
            await w2.close();
            w2 = undefined;
          }
        } catch (err) {
          subscribeFailures.push(err);
        }
      }
      if (!lateJoined) {
        schedule.push(`late (startFrom 0) after publishing`);
        await consumers.subscribe('tick', { group: 'late', startFrom: '0', concurrency: 2, ...subOpts }, mainHandler(plan, late));
      }
    };

    const t0 = Date.now();
    const chaos = chaosLoop();
    await Promise.all([0, 1, 2, 3].map(publisherLoop));
    await pubs.settled(35_000);
    publishing = false;
    await chaos;
    await closing;
    const publishMs = Date.now() - t0;

    const resolved = (s: number) => pubs.is(s, RESOLVED);
    const poison = (s: number) => (plan[s]! & (POISON | FATAL)) !== 0;
    /** Dead-lettered in group `g`: the poison events, and in the worker group the killer. */
    const doomed = (g: string) => (s: number) => poison(s) || (g === 'w' && s === killer);
    const R = count(N, resolved);
    const dead = async (g: string) => (await t.deadLetters('tick', g, 100_000)).map((d) => ({ seq: (d.event!.data as { seq: number }).seq, attempts: d.attempts, error: d.error }));
    const rings = (g: string) => Array.from({ length: PARTITIONS }, (_, p) => t.stats('tick', p, g)!);
    const quiet = (g: string) => rings(g).every((s) => s.size === 0 && s.held === 0);

    // Every resolved event handled (or dead-lettered) in both groups, and the rings empty: bounded wait.
    const missing = async (g: string, rec: Tally) => {
      const dl = new Set((await dead(g)).map((d) => d.seq));
      return some(N, (s) => resolved(s) && (doomed(g)(s) ? !dl.has(s) : rec.ok[s] === 0));
    };
    try {
      await waitFor(
        async () => quiet('w') && quiet('m') && quiet('late') && (await missing('w', w)).length === 0 && (await missing('m', m)).length === 0 && (await missing('late', late)).length === 0,
        20_000,
        'every resolved event handled in every group',
      );
    } catch (err) {
      const state = (s: number) => `${s}: plan ${plan[s]} w ok ${w.ok[s]} calls ${w.calls[s]} / m ok ${m.ok[s]} calls ${m.calls[s]}`;
      throw new Error(
        `${(err as Error).message} (seed ${SEED}). Missing in w: [${(await missing('w', w)).map(state).join('; ')}]; in m: [${(await missing('m', m)).map(state).join('; ')}]; in late: [${(await missing('late', late)).join(', ')}]; ` +
          `rings w ${JSON.stringify(rings('w'))} m ${JSON.stringify(rings('m'))} late ${JSON.stringify(rings('late'))}; schedule: ${schedule.join(', ')}`,
      );
    }
    await sleep(100); // late duplicates, if any, show up
    const deaths = Atomics.load(w.flags, 0);
    const summary = {
      seed: SEED,
      implementation,
      published: pubs.next,
      resolved: R,
      closedRejected: count(N, (s) => pubs.is(s, CLOSED)),
      tryFalse: count(N, (s) => pubs.is(s, TRY_FALSE)),
      afterClose: pubs.afterClose,
      duringClose: pubs.duringClose,
      deaths,
      publishMs,
      closeMs,
      schedule: schedule.length,
    };
    const planned = (s: number) => (plan[s]! & POISON ? MAX_DELIVERIES : plan[s]! & FATAL ? 1 : (plan[s]! & FAILS) + 1);
    const maskOf = (n: number) => ((1 << (n + 1)) - 1) & ~1; // attempts 1..n
    const exact = (rec: Tally) => (s: number) =>
      !resolved(s) || (rec.calls[s] === planned(s) && rec.masks[s] === maskOf(planned(s)) && (poison(s) ? rec.ok[s] === 0 : rec.ok[s] === 1 && rec.okAttempt[s] === planned(s)));
    const off = (rec: Tally) =>
      some(N, (s) => !exact(rec)(s), 20).map((s) => `${s}: plan ${plan[s]} calls ${rec.calls[s]} attempts 0b${rec.masks[s]!.toString(2)} ok ${rec.ok[s]} at ${rec.okAttempt[s]}`);
    const offW = count(N, (s) => !exact(w)(s) && (plan[s]! & (EXIT | KILL)) === 0);
    console.log(`chaos block (${implementation}): ${JSON.stringify({ ...summary, workerOffPlan: offW, workerDuplicates: count(N, (s) => w.ok[s]! > 1) })}`);
    const ctx = `seed ${SEED}, ${implementation}; schedule: ${schedule.join(', ')}`;

    // Publishing: no failure but ClosedError after close; every call after close() rejected with it.
    expect(pubs.errors.map(String), `unexpected publish failures (${ctx})`).toEqual([]);
    expect(pubs.afterCloseNotClosed.map(String), `calls after close() that did not reject with ClosedError (${ctx})`).toEqual([]);
    expect(pubs.afterClose).toBeGreaterThan(0);
    expect(subscribeFailures.map(String), `subscribe/close failures (${ctx})`).toEqual([]);
    expect(R).toBeGreaterThan(1000);

    // Nothing handled that was not accepted.
    for (const [g, rec] of [
      ['w', w],
      ['m', m],
      ['late', late],
    ] as const) {
      expect(
        some(N, (s) => !resolved(s) && rec.calls[s]! > 0),
        `group ${g} handled events whose publish did not resolve (${ctx})`,
      ).toEqual([]);
    }

    // Main-thread group: exactly once, exactly the planned attempts, dead letters exactly the poison events.
    const expectDead = some(N, (s) => resolved(s) && poison(s), N);
    for (const [g, rec] of [
      ['m', m],
      ['late', late],
    ] as const) {
      expect(off(rec), `main-thread group ${g}: events not handled exactly once with their planned attempts (${ctx})`).toEqual([]);
      const deadM = await dead(g);
      expect(
        deadM.map((d) => d.seq).sort((a, b) => a - b),
        `main-thread group ${g}: dead letters (${ctx})`,
      ).toEqual(expectDead);
      expect(
        deadM.filter((d) => d.attempts !== planned(d.seq) || !d.error.includes('chaos failure')),
        `main-thread group ${g}: dead letters' attempts (${ctx})`,
      ).toEqual([]);
    }

    // Worker group: at least once; anything but exactly-once-with-the-planned-attempts only around thread deaths
    // (per death: the finished events of its batch not yet acknowledged, < 64, and what it had in hand).
    expect(deaths, `worker threads that ended themselves (${ctx})`).toBeGreaterThanOrEqual(1);
    const allowance = deaths * 80;
    expect(offW, `worker group: events off their exact plan, beyond what ${deaths} thread deaths allow: ${off(w).join('; ')} (${ctx})`).toBeLessThanOrEqual(allowance);
    const deadW = await dead('w');
    const expectDeadW = some(N, (s) => resolved(s) && doomed('w')(s), N);
    expect(expectDeadW, `the killer published (${ctx})`).toContain(killer);
    expect(
      [...new Set(deadW.map((d) => d.seq))].sort((a, b) => a - b),
      `worker group dead letters (${ctx})`,
    ).toEqual(expectDeadW);
    expect(deadW.length - expectDeadW.length, `worker group: dead letters repeated (${ctx})`).toBeLessThanOrEqual(allowance);
    const wrongDeath = (d: { seq: number; error: string }) => (d.seq === killer ? !/^ConsumerThreadDied/.test(d.error) : !d.error.includes('chaos failure'));
    expect(
      deadW.filter((d) => d.attempts > MAX_DELIVERIES || wrongDeath(d)),
      `worker group dead letters (${ctx})`,
    ).toEqual([]);
    expect(w.ok[killer], `the killer handled in the worker group (${ctx})`).toBe(0);
    // Each death was logged as one, and the group went on (threads replaced, no crash loop, no fatal error).
    expect(errors.filter((e) => /consumer thread died/.test(e.msg)).length, `deaths logged (${ctx})`).toBe(deaths);
    expect(
      errors.filter((e) => /not restarting|failed|crashed/.test(e.msg)).map((e) => e.msg),
      `thread errors (${ctx})`,
    ).toEqual([]);

    // Ring counters: each group's rings took every resolved event once, all popped, nothing dropped or held.
    for (const g of ['w', 'm', 'late']) {
      const sum = rings(g).reduce(
        (a, s) => ({ pushed: a.pushed + s.pushed, popped: a.popped + s.popped, dropped: a.dropped + s.droppedNewest + s.droppedOldest + s.rejected, size: a.size + s.size, held: a.held + s.held }),
        { pushed: 0, popped: 0, dropped: 0, size: 0, held: 0 },
      );
      expect(sum, `ring counters of group ${g} (${ctx})`).toEqual({ pushed: R, popped: R, dropped: 0, size: 0, held: 0 });
    }
    expect(t.totals('tick')).toMatchObject({ pushed: 3 * R, popped: 3 * R });

    // The consumer bus closes in bounded time.
    const c0 = Date.now();
    await consumers.close();
    expect(Date.now() - c0, `consumer bus close (${ctx})`).toBeLessThan(10_000);
  }, 120_000);
});
