/**
 * Worker threads with concurrency > 1: a thread's death is charged to the events it had started and not
 * finished, and an event is dead-lettered with ConsumerThreadDied only on deaths it was proven to cause (it
 * ran alone), so an event that kills every thread that runs it is dead-lettered, and the events that shared
 * a thread with it are not. Both cores.
 */
import { describe, expect, it } from 'vitest';
import { errorLog, fixture, nativeBuses, ticks } from './harness.js';

const sab = (n: number) => new Int32Array(new SharedArrayBuffer(4 * n));

describe.each(['native', 'js'] as const)('native transport thread deaths (%s)', (implementation) => {
  const bus = nativeBuses(implementation, 'native-blame');

  it.each([
    [4, 3],
    [4, 1],
    [1, 3],
  ])('an event that kills its thread after an await, concurrency %i, maxDeliveries %i: it alone is dead-lettered, every other event handled', async (concurrency, maxDeliveries) => {
    const N = 100;
    const { errors, logger } = errorLog();
    const b = await bus({ partitions: 1 }, { logger });
    const calls = sab(N);
    const ok = sab(N);
    const attempts = sab(N);
    const deaths = sab(1);
    const workerData = { killAt: 0, calls: calls.buffer, ok: ok.buffer, attempts: attempts.buffer, deaths: deaths.buffer };
    await b.subscribe('tick', { group: 'g', workers: 2, concurrency, maxDeliveries, handler: fixture('kill-after-await.mjs'), workerData });
    await b.publishMany('tick', ticks(N));
    const idle = await b.idle({ timeoutMs: 10_000 }).then(
      () => 'resolved',
      (err: Error) => err.message,
    );
    const letters = await b.deadLetters('tick', { group: 'g' });
    const state = {
      idle,
      dead: letters.map((l) => ({ seq: (l.event?.data as { seq: number }).seq, attempts: l.attempts, error: String(l.error).slice(0, 60) })),
      deaths: deaths[0],
      notHandled: [...ok].flatMap((x, s) => (s > 0 && x === 0 ? [s] : [])),
    };
    expect(state.idle, JSON.stringify(state)).toBe('resolved');
    expect(
      state.dead.map((d) => d.seq),
      JSON.stringify(state),
    ).toEqual([0]);
    expect(letters[0]!.error).toMatch(/^ConsumerThreadDied/);
    expect(state.notHandled, JSON.stringify(state)).toEqual([]);
    // Threads died maxDeliveries times on it (2 with maxDeliveries 1 when its first death was shared), and
    // were replaced.
    expect(deaths[0]).toBeGreaterThanOrEqual(maxDeliveries);
    expect(deaths[0]).toBeLessThanOrEqual(Math.max(maxDeliveries, 2));
    expect(errors.filter((e) => /consumer thread died/.test(e.msg))).toHaveLength(deaths[0]!);
    expect(errors.filter((e) => /not restarting/.test(e.msg))).toEqual([]);
    // Charged a delivery: only events that were running beside it when a thread died, and once each (it then
    // ran alone); what the dead threads held and had not started came back uncharged.
    const charged = [...attempts].flatMap((a, s) => (s > 0 && a > 1 ? [s] : []));
    expect(charged.length).toBeLessThanOrEqual(concurrency - 1);
    expect(charged.filter((s) => attempts[s]! > 2)).toEqual([]);
  });
});
