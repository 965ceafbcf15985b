/**
 * Redis Cluster resharding under load: while publishers publish and a consumer group (two consumers) consumes,
 * the slots of two partitions move to other masters, one of them twice. Each move is the resharding dance
 * (SETSLOT IMPORTING/MIGRATING, MIGRATE ... KEYS one key at a time with pauses, SETSLOT NODE), so clients meet
 * the slot half moved: ASK for a key already on the new master, TRYAGAIN for a read of a partition whose stream
 * and retry stream are on different masters, UNBLOCKED for a read blocked on a stream MIGRATE took away, then
 * MOVED. A partition's stream, retry stream and DLQ share one slot (keys.ts), so they move together. (GETKEYSINSLOT
 * lists the newest key first: the first move of a partition takes its retry stream first, the second its stream.)
 */
import { describe, expect, it } from 'vitest';
import { createEventBus, EventlaneError, type EventBus } from '../../src/index.js';
import { uniquePrefix, withRedis, type RedisServer } from '../helpers/redis-server.js';
import { clusterForTests, type RedisCluster } from '../helpers/redis-cluster.js';
import { sleep, waitFor } from '../helpers/wait.js';
import { partitionForKey } from '../../src/partition.js';
import { retryKey, streamKey, type RedisStreamsTransport } from '../../transports/redis-streams/index.js';
import { events, order, orders, recordingLogger } from './redis-common.js';

const PARTITIONS = 4;
/** The keys events are published with (event seq s gets KEYS[s % 32]): between them, every partition. */
const KEYS = Array.from({ length: 32 }, (_, i) => `k${i}`);

// No replicas, and a node timeout no test step comes near: the masters stay the masters.
const cluster = clusterForTests(3, 0, 15_000);

/** Error replies of each kind a master has sent since its last CONFIG RESETSTAT (INFO errorstats). */
async function errorStats(s: RedisServer): Promise<Record<string, number>> {
  const info = await withRedis(s.port, (c) => c.info('errorstats'));
  return Object.fromEntries([...info.matchAll(/errorstat_(\w+):count=(\d+)/g)].map((m) => [m[1]!, Number(m[2])]));
}

/** Publishes batches (publishMany of 20) and single publishes, all keyed over every partition, until `stop()`. */
function publishing(b: EventBus<typeof events>) {
  let seq = 0;
  let stopped = false;
  const accepted = new Set<number>();
  const failures: string[] = [];
  const outcome = (seqs: number[]) =>
    [() => seqs.forEach((s) => accepted.add(s)), (err: unknown) => failures.push(err instanceof EventlaneError ? `${err.code}: ${err.message}` : `untyped: ${String(err)}`)] as const;
  const key = (d: { seq: number }) => KEYS[d.seq % KEYS.length]!;
  const batches = (async () => {
    while (!stopped) {
      const batch = orders(20, seq);
      seq += 20;
      await b.publishMany('order.created', batch, { key }).then(...outcome(batch.map((o) => o.seq)));
      await sleep(5);
    }
  })();
  const singles = (async () => {
    const inFlight = new Set<Promise<unknown>>();
    while (!stopped) {
      const s = seq++;
      const p = b.publish('order.created', order(s), { key: key(order(s)) }).then(...outcome([s]));
      inFlight.add(p);
      void p.finally(() => inFlight.delete(p));
      await sleep(2);
    }
    await Promise.all(inFlight);
  })();
  return {
    accepted,
    failures,
    get published() {
      return seq;
    },
    async stop() {
      stopped = true;
      await Promise.all([batches, singles]);
    },
  };
}

describe('redis-streams: cluster resharding', () => {
  it('slots of partitions move to other masters (ASK, TRYAGAIN, MOVED) while publishing and consuming: nothing lost, nothing left pending, consumption goes on', async () => {
    const on: RedisCluster = cluster();
    const prefix = uniquePrefix('cluster-reshard');
    const key = (p: number) => streamKey(prefix, 'order.created', p);
    const retry = (p: number) => retryKey(prefix, 'order.created', p, 'g');
    const transport = { type: 'redis-streams', cluster: { nodes: on.nodes }, prefix, partitions: PARTITIONS };
    const logger = recordingLogger();
    const publisher = await createEventBus({ service: 'it', events, transport });
    const consumers = await Promise.all([1, 2].map(() => createEventBus({ service: 'it', events, logger, transport })));
    try {
      // The consumer group: two consumers, 4 handlers each; every 25th event fails its first attempt (a retry
      // entry, in the partition's slot). Handled: how many times each seq was.
      const handled = new Map<number, number>();
      let failedOnce = 0;
      for (const [i, b] of consumers.entries()) {
        await b.subscribe(
          'order.created',
          { group: 'g', consumer: `c${i + 1}`, concurrency: 4, blockMs: 200, minIdleMs: 1000, maxDeliveries: 5, retry: { backoff: { initialMs: 20, maxMs: 50 } } },
          async (e, ctx) => {
            if (e.data.seq % 25 === 3 && ctx.attempt === 1) {
              failedOnce++;
              throw new Error('first attempt fails');
            }
            // Some handlers finish later than others; a few outlive minIdleMs / 3, so the keepalive's script
            // (EVALSHA, EVAL after NOSCRIPT on a master that never ran it) resets their entries' idle time.
            await sleep(e.data.seq % 200 === 100 ? 600 : e.data.seq % 3);
            handled.set(e.data.seq, (handled.get(e.data.seq) ?? 0) + 1);
          },
        );
      }
      // Every partition stream and retry stream exists (the group made them); KEYS cover every partition.
      expect(new Set(KEYS.map((k) => partitionForKey(k, PARTITIONS))).size).toBe(PARTITIONS);

      // The moves: partition a to another master and, after b's move, on to the third; partition b to
      // another master (where a's first move did not go, if it can: the masters trade slots both ways).
      const masters = await on.masters();
      expect(masters).toHaveLength(3);
      const [a, bp] = [0, 1];
      const homeA = await on.masterOf(key(a));
      const homeB = await on.masterOf(key(bp));
      const firstA = masters.find((m) => m !== homeA && m !== homeB) ?? masters.find((m) => m !== homeA)!;
      const thenA = masters.find((m) => m !== homeA && m !== firstA)!;
      const toB = masters.find((m) => m !== homeB && m !== firstA) ?? masters.find((m) => m !== homeB)!;
      await Promise.all(masters.map((m) => withRedis(m.port, (c) => c.config('RESETSTAT'))));

      const pub = publishing(publisher);
      const moves: string[] = [];
      const move = async (p: number, to: RedisServer) => {
        const from = await on.masterOf(key(p));
        // One key per MIGRATE, 250 ms between them: the stream and the retry stream spend that long apart.
        await on.migrateSlot(key(p), to, { keysPerMigrate: 1, pauseMs: 250 });
        moves.push(`partition ${p}: ${from.port} -> ${to.port}`);
        await sleep(400);
      };
      const started = Date.now();
      await sleep(500);
      await move(a, firstA);
      await move(bp, toB);
      await move(a, thenA);
      await sleep(Math.max(500, 4000 - (Date.now() - started)));
      await pub.stop();
      expect(moves).toHaveLength(3);
      expect(await on.masterOf(key(a))).toBe(thenA);
      expect(await on.masterOf(key(bp))).toBe(toB);

      // The publishes all resolved (ioredis follows ASK and MOVED for an XADD), and the moves met clients
      // mid-way: the old masters answered ASK, and TRYAGAIN for the reads over a partition split in two (MOVED
      // comes also without a move, from commands sent before a client knew the slots: not asked here).
      expect(pub.failures).toEqual([]);
      expect(pub.accepted.size).toBe(pub.published);
      expect(pub.accepted.size).toBeGreaterThan(1000);
      const redirects = (await Promise.all(masters.map(errorStats))).reduce<Record<string, number>>((sum, s) => {
        for (const [k, n] of Object.entries(s)) sum[k] = (sum[k] ?? 0) + n;
        return sum;
      }, {});
      expect(redirects['ASK'] ?? 0).toBeGreaterThan(0);
      expect(redirects['TRYAGAIN'] ?? 0).toBeGreaterThan(0);

      // Consumption goes on after the moves: events published now, to every partition (the moved ones too).
      const after = orders(200, 1_000_000);
      await publisher.publishMany('order.created', after, { key: (d) => KEYS[d.seq % KEYS.length]! });
      for (const o of after) pub.accepted.add(o.seq);
      expect(new Set(after.map((o) => partitionForKey(KEYS[o.seq % KEYS.length]!, PARTITIONS))).size).toBe(PARTITIONS);

      // Every publish that resolved is handled; then the group has nothing left: none undelivered, pending
      // or waiting for a retry, and no dead letter.
      const missing = () => [...pub.accepted].filter((s) => !handled.has(s));
      await waitFor(() => missing().length === 0, 20_000, 'every accepted event handled').catch((err: Error) => {
        const byPartition = missing().reduce<Record<number, number>>((n, s) => {
          const p = partitionForKey(KEYS[s % KEYS.length]!, PARTITIONS);
          n[p] = (n[p] ?? 0) + 1;
          return n;
        }, {});
        throw new Error(`${err.message}: ${missing().length} not handled, per partition ${JSON.stringify(byPartition)} (moved: ${moves.join('; ')})`);
      });
      await consumers[0]!.idle({ timeoutMs: 15_000 });
      expect(failedOnce).toBeGreaterThan(0);
      const admin = await (consumers[0]!.transport as RedisStreamsTransport).admin();
      expect((await admin.pending('order.created', 'g')).total).toBe(0);
      expect(await admin.deadLetters('order.created')).toEqual([]);
      expect([...handled.keys()].filter((s) => !pub.accepted.has(s))).toEqual([]);

      // On the moved partitions' new masters, asked directly: the group came along with the streams, and the
      // acks landed there (nothing pending in the stream or the retry stream).
      for (const [p, node] of [
        [a, thenA],
        [bp, toB],
      ] as const) {
        await withRedis(node.port, async (c) => {
          const groups = (await c.xinfo('GROUPS', key(p))) as unknown[][];
          expect(groups.map((g) => g[g.indexOf('name') + 1])).toEqual(['g']);
          expect(((await c.xpending(key(p), 'g')) as unknown[])[0]).toBe(0);
          expect(((await c.xpending(retry(p), 'g')) as unknown[])[0]).toBe(0);
          expect(await c.xlen(key(p))).toBeGreaterThan(0);
        });
      }
      // The old masters hold nothing of those slots any more.
      for (const [p, node] of [
        [a, homeA],
        [a, firstA],
        [bp, homeB],
      ] as const) {
        const slot = await withRedis(node.port, async (c) => Number(await c.call('CLUSTER', 'KEYSLOT', key(p))));
        expect(await withRedis(node.port, async (c) => Number(await c.call('CLUSTER', 'COUNTKEYSINSLOT', slot)))).toBe(0);
      }
      // No ack, retry entry or dead letter was refused on the way (an XACK that failed would show only as a
      // redelivery, which the checks above let pass).
      const warnings = logger.lines.filter((l) => l.level === 'warn' || l.level === 'error').map((w) => `${w.msg} ${String(w.obj['err'] ?? '')}`);
      expect(warnings.filter((w) => /XACK failed|could not move|write failed|dead-lettered/.test(w))).toEqual([]);
      const reclaims = logger.lines.filter((l) => l.msg.startsWith('reclaimed')).length;
      const twice = [...handled.values()].filter((n) => n > 1).length;
      console.log(
        `redis-cluster-reshard: ${moves.join('; ')}; ${pub.accepted.size} published, ${failedOnce} failed once, ${twice} handled twice, ${reclaims} reclaims; error replies ${JSON.stringify(redirects)}; warnings ${JSON.stringify(warnings)}`,
      );
    } finally {
      await Promise.allSettled([publisher, ...consumers].map((b) => b.close()));
    }
  }, 60_000);
});
