/** Redis Cluster: three masters started by the harness; partitions spread over slots by hash tag. */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Cluster } from 'ioredis';
import { createEventBus, ReplicationError, type EventBus } from '../../src/index.js';
import { RedisCluster, uniquePrefix } from '../helpers/redis-server.js';
import { waitFor } from '../helpers/wait.js';
import { streamKey, type RedisStreamsTransport } from '../../transports/redis-streams/index.js';
import { events, orders } from './redis-common.js';

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
    const b: EventBus<typeof events> = await createEventBus({
      service: 'it',
      events,
      transport: { type: 'redis-streams', cluster: { nodes: cluster.nodes }, prefix, partitions: 6 },
    });
    try {
      const seen = new Set<number>();
      const other = new Set<number>();
      await b.subscribe('order.created', { group: 'g', concurrency: 8, blockMs: 200, maxDeliveries: 2, retry: { backoff: { initialMs: 10, maxMs: 20, multiplier: 1, jitter: 0 } } }, (e) => {
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
      const c = new Cluster(cluster.nodes);
      try {
        const slots = new Set<number>();
        for (let p = 0; p < 6; p++) {
          expect(await c.xlen(streamKey(prefix, 'order.created', p))).toBeGreaterThan(0);
          slots.add(Number(await c.cluster('KEYSLOT', streamKey(prefix, 'order.created', p))));
        }
        expect(slots.size).toBe(6);
        const admin = await t.admin();
        expect((await admin.listStreams()).filter((s) => s.type === 'order.created').length).toBe(6);
      } finally {
        c.disconnect();
      }
    } finally {
      await b.close();
    }
  }, 60_000);

  it('waitForReplicas: a WAIT per write on the node of its stream; masters without replicas reject', async () => {
    const prefix = uniquePrefix('cluster-wait');
    const b: EventBus<typeof events> = await createEventBus({
      service: 'it',
      events,
      transport: { type: 'redis-streams', cluster: { nodes: cluster.nodes }, prefix, partitions: 6, waitForReplicas: { count: 1, timeoutMs: 50 } },
    });
    try {
      // One unit, and a write of six units (one per partition, spread over the three masters).
      await expect(b.publish('order.created', orders(1)[0]!)).rejects.toBeInstanceOf(ReplicationError);
      const keys = Array.from({ length: 60 }, (_, i) => `k${i}`);
      await expect(b.publishMany('order.created', orders(60, 1), { key: (d) => keys[d.seq - 1] })).rejects.toMatchObject({ code: 'ERR_REPLICATION', acknowledged: 0 });
      // The events are stored all the same.
      const c = new Cluster(cluster.nodes);
      try {
        let stored = 0;
        for (let p = 0; p < 6; p++) stored += await c.xlen(streamKey(prefix, 'order.created', p));
        expect(stored).toBeGreaterThanOrEqual(7); // entries: 1 + at least one per partition written
      } finally {
        c.disconnect();
      }
    } finally {
      await b.close();
    }
  }, 30_000);
});
