/** Redis Cluster: three masters started by the harness; partitions spread over slots by hash tag. */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Cluster } from 'ioredis';
import { ConfigError, createEventBus, ReplicationError, type EventBus } from '../../src/index.js';
import { commandCalls, uniquePrefix } from '../helpers/redis-server.js';
import { clusterForTests, RedisCluster } from '../helpers/redis-cluster.js';
import { sleep, waitFor } from '../helpers/wait.js';
import { partitionForKey } from '../../src/partition.js';
import { streamKey, type RedisStreamsTransport } from '../../transports/redis-streams/index.js';
import { events, fastRead, order, orders, publishThrough } from './redis-common.js';

/** A bus on `on`'s Cluster with the given transport options. */
function clusterBus(on: RedisCluster, prefix: string, transport: Record<string, unknown>): Promise<EventBus<typeof events>> {
  return createEventBus({ service: 'it', events, transport: { type: 'redis-streams', cluster: { nodes: on.nodes }, prefix, ...transport } });
}

/** Runs `f` with a plain ioredis Cluster client on `on`, disconnected after. */
async function withClient<T>(on: RedisCluster, f: (c: Cluster) => Promise<T>): Promise<T> {
  const c = new Cluster(on.nodes);
  try {
    return await f(c);
  } finally {
    c.disconnect();
  }
}

/**
 * Consumes into `seen`, publishes 600 events and waits for them, then publishes one every 5 ms (seq s to
 * partition s % 6) through a SIGKILL of partition 0's master and its failover. `elsewhere`: the partitions
 * whose master was another one.
 */
async function throughMasterCrash(on: RedisCluster, b: EventBus<typeof events>, prefix: string) {
  const seen = new Set<number>();
  await b.subscribe('order.created', { group: 'g', concurrency: 8, ...fastRead }, (e) => void seen.add(e.data.seq));
  await b.publishMany('order.created', orders(600));
  await waitFor(() => seen.size === 600, 10_000, 'events before the failover');
  const key = (p: number) => streamKey(prefix, 'order.created', p);
  const doomed = await on.masterOf(key(0));
  const elsewhere: number[] = [];
  for (let p = 1; p < 6; p++) if ((await on.masterOf(key(p))) !== doomed) elsewhere.push(p);
  const r = await publishThrough(
    b,
    600,
    async () => {
      await sleep(200);
      await on.failover(key(0));
      await sleep(500);
    },
    (s) => keyFor(s % 6),
  );
  return { seen, r, elsewhere };
}

/** A key whose events go to partition `p` of 6, for keyed publishes that land where a test wants them. */
function keyFor(p: number): string {
  return Array.from({ length: 1000 }, (_, i) => `k${i}`).find((k) => partitionForKey(k, 6) === p)!;
}

/** 6 partitions on one pool connection, each write waiting for 1 replica (300 ms). */
const WAIT_ONE_OF_6 = { partitions: 6, pool: { size: 1 }, waitForReplicas: { count: 1, timeoutMs: 300 } };

let cluster: RedisCluster;
beforeAll(async () => {
  cluster = await RedisCluster.start(3);
}, 120_000);
afterAll(async () => {
  await cluster?.stop();
});

describe('redis-streams: cluster', () => {
  it('round-trips through a 3-master cluster, with retries and DLQ in the partition slot', async () => {
    const prefix = uniquePrefix('cluster');
    const b = await clusterBus(cluster, prefix, { partitions: 6 });
    try {
      const seen = new Set<number>();
      const other = new Set<number>();
      await b.subscribe('order.created', { group: 'g', concurrency: 8, blockMs: 200, maxDeliveries: 2, retry: { backoff: { initialMs: 10, maxMs: 20 } } }, (e) => {
        if (e.data.seq === 7) throw new Error('seven');
        seen.add(e.data.seq);
      });
      await b.subscribe('order.created', { group: 'h', blockMs: 200 }, (e) => void other.add(e.data.seq));
      const keys = Array.from({ length: 50 }, (_, i) => `k${i}`);
      await b.publishMany('order.created', orders(3000), { key: (d) => keys[d.seq % 50] });
      await Promise.all(orders(200, 3000).map((o) => b.publish('order.created', o)));
      await waitFor(() => seen.size === 3199 && other.size === 3200, 20_000, 'all events in both groups');
      const t = b.transport as RedisStreamsTransport;
      await waitFor(async () => (await t.deadLetters('order.created', 'g')).length === 1, 10_000, 'the dead letter');
      // Partitions really landed on different masters.
      await withClient(cluster, async (c) => {
        const slots = new Set<number>();
        for (let p = 0; p < 6; p++) {
          expect(await c.xlen(streamKey(prefix, 'order.created', p))).toBeGreaterThan(0);
          slots.add(Number(await c.cluster('KEYSLOT', streamKey(prefix, 'order.created', p))));
        }
        expect(slots.size).toBe(6);
        const admin = await t.admin();
        expect((await admin.listStreams()).filter((s) => s.type === 'order.created').length).toBe(6);
      });
    } finally {
      await b.close();
    }
  }, 60_000);

  it('a url naming one Cluster node is a ConfigError pointing at transport.cluster (a plain connection got MOVED for most partitions)', async () => {
    const err = await createEventBus({ service: 'it', events, transport: { type: 'redis-streams', url: `redis://127.0.0.1:${cluster.nodes[0]!.port}`, partitions: 6 } }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ConfigError);
    expect((err as Error).message).toContain(`redis://127.0.0.1:${cluster.nodes[0]!.port} is a Redis Cluster node: give the cluster's nodes as transport.cluster.nodes`);
  });

  it('waitForReplicas on masters without replicas: a single publish and a write over six partitions reject, the entries are stored', async () => {
    const prefix = uniquePrefix('cluster-wait');
    const b = await clusterBus(cluster, prefix, { partitions: 6, waitForReplicas: { count: 1, timeoutMs: 50 } });
    try {
      // One unit, and a write of six units (one per partition, spread over the three masters).
      await expect(b.publish('order.created', orders(1)[0]!)).rejects.toBeInstanceOf(ReplicationError);
      const keys = Array.from({ length: 60 }, (_, i) => `k${i}`);
      await expect(b.publishMany('order.created', orders(60, 1), { key: (d) => keys[d.seq - 1] })).rejects.toMatchObject({ code: 'ERR_REPLICATION', acknowledged: 0 });
      // The events are stored all the same.
      await withClient(cluster, async (c) => {
        let stored = 0;
        for (let p = 0; p < 6; p++) stored += await c.xlen(streamKey(prefix, 'order.created', p));
        expect(stored).toBeGreaterThanOrEqual(7); // entries: 1 + at least one per partition written
      });
    } finally {
      await b.close();
    }
  }, 30_000);
});

describe('redis-streams: cluster failover', () => {
  // 3 masters, a replica each, 2 s node timeout; the other masters serve while one's slots are uncovered
  // (with full coverage required, the whole cluster answers CLUSTERDOWN for ~1 s of the failover).
  const replicated = clusterForTests(3, 1, 2000, false);

  it('a master killed mid-publish: its replica takes over, publishes wait for it instead of failing, and all partitions carry on', async () => {
    const prefix = uniquePrefix('cluster-failover');
    // One pool connection: 32 write slots.
    const b = await clusterBus(replicated(), prefix, { partitions: 6, commandTimeoutMs: 15_000, pool: { size: 1 } });
    try {
      // Per partition, the order events are stored in (their first delivery to a one-at-a-time consumer).
      const stored: number[][] = [[], [], [], [], [], []];
      const firstSeen = new Set<number>();
      await b.subscribe('order.created', { group: 'order', concurrency: 1, ...fastRead }, (e) => {
        if (e.data.seq < 600 || e.data.seq >= 10_000 || firstSeen.has(e.data.seq)) return;
        firstSeen.add(e.data.seq);
        stored[e.data.seq % 6]!.push(e.data.seq);
      });
      const { seen, r, elsewhere } = await throughMasterCrash(replicated(), b, prefix);
      // The failover takes a few seconds; each write is retried on the new master within commandTimeoutMs, not
      // given up after ioredis's default 16 redirection tries (~1.6 s).
      expect(r.tally).toEqual({ ok: r.accepted.length });
      expect(r.accepted.length).toBeGreaterThan(100);
      // Publishes to the other masters' partitions go on: a write waiting on the dead master frees its
      // slot after 200 ms, so the writes to partition 0 cannot fill every slot and make the others wait for
      // the failover too.
      const other = r.accepted.filter((s) => elsewhere.includes(s % 6)).map((s) => r.tookMs.get(s)!);
      expect(elsewhere.length).toBeGreaterThan(0);
      expect(Math.max(...other)).toBeLessThan(1000);
      expect(b.stats().slotsFreed).toBeGreaterThan(0);
      // The other masters' partitions stored their keys' events in publish order. (The dead master's did not
      // quite: ioredis sends the writes that were in flight when it died again in another order; see
      // docs/consumer-semantics.md, "Replication and failover".)
      await waitFor(() => r.accepted.every((x) => firstSeen.has(x)), 30_000, 'every publish read');
      for (const p of elsewhere) expect(stored[p]).toEqual([...stored[p]!].sort((x, y) => x - y));

      // Afterwards every partition (the failed-over one too) takes writes and delivers them.
      const after = Array.from({ length: 600 }, (_, i) => 10_000 + i);
      await b.publishMany('order.created', after.map(order));
      await waitFor(() => after.every((s) => seen.has(s)), 30_000, 'events published after the failover');
    } finally {
      await b.close();
    }
  }, 120_000);
});

describe('redis-streams: cluster failover with waitForReplicas', () => {
  const replicated = clusterForTests(3, 1, 2000);

  it('waitForReplicas sends one WAIT per node a write touched, not one per partition', async () => {
    const prefix = uniquePrefix('cluster-wait-node');
    const b = await clusterBus(replicated(), prefix, { partitions: 12, pool: { size: 1 }, waitForReplicas: { count: 1, timeoutMs: 1000 } });
    const c = new Cluster(replicated().nodes);
    try {
      await b.publish('order.created', order(0)); // connects and learns the slot map
      await c.ping();
      const masters = c.nodes('master');
      expect(masters).toHaveLength(3);
      await Promise.all(masters.map((m) => m.config('RESETSTAT')));
      const keys = Array.from({ length: 48 }, (_, i) => `k${i}`);
      await b.publishMany('order.created', orders(120, 1), { key: (d) => keys[d.seq % 48]! });
      const stats = await Promise.all(masters.map((m) => commandCalls(m)));
      const waits = stats.map((calls) => calls.get('wait') ?? 0);
      const xadds = stats.map((calls) => calls.get('xadd') ?? 0);
      // One write (one pool connection) with an entry per partition: one WAIT on each master that took
      // entries, after all of them, not one per entry (12, one per partition).
      expect(xadds.reduce((a, x) => a + x, 0)).toBe(12);
      expect(waits).toEqual(xadds.map((x) => (x > 0 ? 1 : 0)));
      expect(waits.reduce((a, x) => a + x, 0)).toBeGreaterThanOrEqual(2);
      let stored = 0;
      for (let p = 0; p < 12; p++) stored += await c.xlen(streamKey(prefix, 'order.created', p));
      expect(stored).toBe(13);
    } finally {
      c.disconnect();
      await b.close();
    }
  }, 30_000);

  it('waitForReplicas follows a write whose slot moved to another master while it was in flight (MOVED)', async () => {
    const prefix = uniquePrefix('cluster-wait-moved');
    const key = (p: number) => streamKey(prefix, 'order.created', p);
    const b = await clusterBus(replicated(), prefix, WAIT_ONE_OF_6);
    try {
      // Every partition written once, with replicas up: resolves, and the client learns the slot map.
      await b.publishMany('order.created', orders(6, 1), { key: (d) => keyFor(d.seq - 1) });
      // Target: the master holding the fewest of the partitions; three partitions elsewhere will move to it.
      const masters = await replicated().masters();
      const home = await Promise.all([0, 1, 2, 3, 4, 5].map((p) => replicated().masterOf(key(p))));
      const target = masters.reduce((best, m) => (home.filter((h) => h === m).length < home.filter((h) => h === best).length ? m : best));
      const away = [0, 1, 2, 3, 4, 5].filter((p) => home[p] !== target);
      expect(away.length).toBeGreaterThanOrEqual(3);
      const [p1, p2, p3] = away as [number, number, number];
      const stalled = await replicated().replicaOf(target);
      // The target's replica stalled only while publishing (a stopped server would hang the admin calls).
      const whileStalled = async (f: () => Promise<unknown>) => {
        stalled.pause();
        try {
          await f();
        } finally {
          stalled.resume();
        }
      };
      // Two units of one write, both slots moved: both XADDs are redirected to the target after their WAIT
      // went to the old masters (whose replicas are fine); the target's stalled replica must show.
      await replicated().migrateSlot(key(p1), target);
      await replicated().migrateSlot(key(p2), target);
      await whileStalled(() =>
        expect(b.publishMany('order.created', [order(100), order(101)], { key: (d) => keyFor(d.seq === 100 ? p1 : p2) })).rejects.toMatchObject({ code: 'ERR_REPLICATION', acknowledged: 0 }),
      );
      // A single publish (its own path), its slot moved after the client refreshed its map.
      await sleep(500);
      await replicated().migrateSlot(key(p3), target);
      await whileStalled(() => expect(b.publish('order.created', order(102), { key: keyFor(p3) })).rejects.toMatchObject({ code: 'ERR_REPLICATION', acknowledged: 0 }));
      // The writes are on the target all the same, and with its replica back publishing resolves there.
      await waitFor(
        async () =>
          await b.publish('order.created', order(103), { key: keyFor(p3) }).then(
            () => true,
            () => false,
          ),
        10_000,
        'a replicated publish on the new master',
      );
      await withClient(replicated(), async (c) => {
        for (const p of [p1, p2, p3]) expect(await c.xlen(key(p))).toBeGreaterThanOrEqual(2);
      });
    } finally {
      await b.close();
    }
  }, 60_000);

  it('waitForReplicas follows a write that an ASK sent to the master importing its slot', async () => {
    const prefix = uniquePrefix('cluster-wait-ask');
    const key = (p: number) => streamKey(prefix, 'order.created', p);
    const b = await clusterBus(replicated(), prefix, WAIT_ONE_OF_6);
    try {
      // Partition p's stream does not exist yet; its slot starts moving to `target`. Its old master has no
      // such key, so it answers each XADD with ASK and ioredis resends it to the target, slot map unchanged.
      const p = 0;
      const source = await replicated().masterOf(key(p));
      const masters = await replicated().masters();
      const target = masters.find((m) => m !== source)!;
      const homes = await Promise.all([1, 2, 3, 4, 5].map(async (q) => [q, await replicated().masterOf(key(q))] as const));
      const q = homes.find(([, m]) => m !== target)![0]; // a partition whose master's replica stays up
      await b.publish('order.created', order(1), { key: keyFor(q) }); // resolves; the client knows the slots
      await replicated().beginMigration(key(p), target);
      const stalled = await replicated().replicaOf(target);
      stalled.pause();
      try {
        // A single publish (its own path): the WAIT routed by slot would go to the old master, whose replica
        // is fine; the write is on the target, whose replica is stalled.
        await expect(b.publish('order.created', order(2), { key: keyFor(p) })).rejects.toMatchObject({ code: 'ERR_REPLICATION', acknowledged: 0 });
        // Two units in one write: only the redirected one fails.
        const [asked, stayed] = await Promise.allSettled([b.publish('order.created', order(3), { key: keyFor(p) }), b.publish('order.created', order(4), { key: keyFor(q) })]);
        expect(asked).toMatchObject({ status: 'rejected', reason: { code: 'ERR_REPLICATION', acknowledged: 0 } });
        expect(stayed).toMatchObject({ status: 'fulfilled' });
      } finally {
        stalled.resume();
      }
      await replicated().migrateSlot(key(p), target); // ends the migration: the stream (on the target) stays there
      await waitFor(
        async () =>
          await b.publish('order.created', order(5), { key: keyFor(p) }).then(
            () => true,
            () => false,
          ),
        10_000,
        'a replicated publish on the new master',
      );
      await withClient(replicated(), async (c) => expect(await c.xlen(key(p))).toBe(3));
    } finally {
      await b.close();
    }
  }, 60_000);

  it('a master killed mid-publish loses no publish that resolved; writes its promoted replica cannot replicate reject with ReplicationError', async () => {
    const prefix = uniquePrefix('cluster-failover-wait');
    const b = await clusterBus(replicated(), prefix, { partitions: 6, commandTimeoutMs: 15_000, waitForReplicas: { count: 1, timeoutMs: 200 } });
    try {
      const { seen, r } = await throughMasterCrash(replicated(), b, prefix);
      // Resolved: on the master and its replica. The promoted replica has no replica of its own, so writes
      // retried or sent to it afterwards are stored but reject with ReplicationError. A write whose WAIT was
      // in flight when the master died rejects with ConnectionError: whether it was replicated is unknown.
      expect(Object.keys(r.tally).filter((k) => k !== 'ok' && k !== 'ERR_REPLICATION' && k !== 'ERR_CONNECTION')).toEqual([]);
      expect(r.tally['ERR_REPLICATION']).toBeGreaterThan(0);
      expect(r.accepted.length).toBeGreaterThan(100);
      // No acknowledged event was lost: each is delivered, from whichever master holds its partition now.
      await waitFor(() => r.accepted.every((s) => seen.has(s)), 30_000, 'every acknowledged event');
    } finally {
      await b.close();
    }
  }, 120_000);
});
