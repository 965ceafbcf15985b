/**
 * Redis at maxmemory (`noeviction`) while a group consumes: Redis refuses every XADD (OOM) but still serves
 * reads, XACK and XCLAIM. Publishing rejects with a typed error; consumers go on handling and acking, and the
 * retry and dead-letter writes of failed events wait for memory instead of leaving their entries to be
 * reclaimed as if a consumer had died on them (which, held long enough, dead-lettered whole batch entries,
 * events their handlers had finished included).
 */
import { describe, expect, it } from 'vitest';
import { Redis } from 'ioredis';
import { TransportError } from '../../src/index.js';
import { uniquePrefix } from '../helpers/redis-server.js';
import { sleep } from '../helpers/wait.js';
import { perTestResources } from './fault-harness.js';
import { fastRetry, order, orders } from './redis-common.js';

const { cleanup, server, bus } = perTestResources();

describe('redis-streams: Redis out of memory', () => {
  it('consumers keep handling; retries and dead letters wait for memory; no finished event is dead-lettered', async () => {
    const s = await server();
    const admin = new Redis(s.url);
    cleanup.push(() => admin.disconnect());
    const prefix = uniquePrefix('oom');
    const a = await bus(s.url, {}, prefix);
    const b = await bus(s.url, {}, prefix);
    let open!: () => void;
    const gate = new Promise<void>((resolve) => (open = resolve));
    const handled = new Map<number, number>();
    const handler = async (e: { data: { seq: number } }, ctx: { attempt: number }): Promise<void> => {
      await gate;
      const seq = e.data.seq;
      if (seq % 50 === 0) throw new Error('poison');
      if (seq % 7 === 0 && ctx.attempt === 1) throw new Error('first attempt fails');
      handled.set(seq, (handled.get(seq) ?? 0) + 1);
    };
    // Two consumers of one group, reclaiming entries idle for 600 ms: while Redis is full, an entry left
    // pending would be reclaimed (its delivery count raised) several times over.
    const options = { group: 'g', maxDeliveries: 3, ...fastRetry, blockMs: 200, minIdleMs: 600 };
    await a.subscribe('order.created', { ...options, consumer: 'a' }, handler);
    await b.subscribe('order.created', { ...options, consumer: 'b' }, handler);
    const N = 2000;
    for (let i = 0; i < N; i += 100) await a.publishMany('order.created', orders(100, i)); // 40 batch entries

    const oomReplies = async (): Promise<number> => Number(/errorstat_OOM:count=(\d+)/.exec(String(await admin.info('errorstats')))?.[1] ?? 0);
    const oomBefore = await oomReplies();
    await admin.config('SET', 'maxmemory', '1');
    const refused = await a.publish('order.created', order(N)).catch((e: unknown) => e);
    expect(refused).toBeInstanceOf(TransportError);
    expect((refused as Error).message).toMatch(/OOM/);
    open();
    await sleep(3000);
    const finishedWhileFull = [...handled.keys()].length;
    expect(await a.deadLetters('order.created', { group: 'g' })).toHaveLength(0); // no DLQ write got through
    // Refused writes: each failed event's first try, the refused publish, and one probe per wait per consumer
    // (about 6 in 3 s); not every failed event trying again on its own (~6 tries each in 3 s).
    const failing = orders(N).filter((o) => o.seq % 50 === 0 || o.seq % 7 === 0).length;
    const refusedWrites = (await oomReplies()) - oomBefore;
    expect(refusedWrites).toBeLessThan(failing + 40);
    await admin.config('SET', 'maxmemory', '0');

    await a.idle({ timeoutMs: 30_000 });
    const poison = orders(N)
      .filter((o) => o.seq % 50 === 0)
      .map((o) => o.seq);
    const dead = await a.deadLetters('order.created', { group: 'g', limit: 10_000 });
    expect(dead.map((d) => (d.valid ? d.event.data.seq : -1)).sort((x, y) => x - y)).toEqual(poison);
    expect(dead.every((d) => d.attempts === 3 && d.error.includes('poison'))).toBe(true);
    const missing = orders(N).filter((o) => o.seq % 50 !== 0 && !handled.has(o.seq));
    expect(missing).toEqual([]);
    // Entries were never redelivered: every event finished exactly once.
    expect([...handled.values()].filter((n) => n !== 1)).toEqual([]);
    // Successes went on while Redis was full (all but the events that fail their first attempt).
    expect(finishedWhileFull).toBeGreaterThanOrEqual(N - poison.length - Math.ceil(N / 7));
  }, 60_000);
});
