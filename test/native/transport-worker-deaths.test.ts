/** Native transport worker consumers whose threads die: replaced, what they held delivered again or reported lost, retries and dead letters. */
import { describe, expect, it } from 'vitest';
import { waitFor } from '../helpers/wait.js';
import { errorLog, fixture, nativeBuses, ticks, transportOf } from './harness.js';

const fast = { retry: { backoff: { initialMs: 10, maxMs: 20 } } };

describe.each(['native', 'js'] as const)('native transport (%s)', (implementation) => {
  const bus = nativeBuses(implementation, 'native-test');

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
});
