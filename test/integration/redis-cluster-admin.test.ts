/**
 * Redis Cluster: the operations API over several masters while one of them does not answer (stalled, or dead
 * and not failed over yet). Pending counts and group summaries must fail then, not report the reachable
 * masters' share as the whole. And right after a failover, listing the streams finds those of the promoted replica.
 */
import { describe, expect, it } from 'vitest';
import { Cluster } from 'ioredis';
import { ConnectionError, createEventBus } from '../../src/index.js';
import { uniquePrefix } from '../helpers/redis-server.js';
import { clusterForTests } from '../helpers/redis-cluster.js';
import { partitionForKey } from '../../src/partition.js';
import { sleep } from '../helpers/wait.js';
import { streamKey, type RedisStreamsTransport } from '../../transports/redis-streams/index.js';
import { events, orders } from './redis-common.js';

const PARTITIONS = 6;

// A long node timeout: a stalled master stays the slot's master (no failover) for the whole test.
const cluster = clusterForTests(3, 0, 60_000);

describe('redis-streams: cluster admin', () => {
  it('pending and groups reject with ConnectionError while a master holding partitions is stalled, instead of undercounting', async () => {
    const prefix = uniquePrefix('cluster-admin');
    const key = (p: number) => streamKey(prefix, 'order.created', p);
    const b = await createEventBus({ service: 'it', events, transport: { type: 'redis-streams', cluster: { nodes: cluster().nodes }, prefix, partitions: PARTITIONS, commandTimeoutMs: 1000 } });
    const raw = new Cluster(cluster().nodes);
    const stalled = await cluster().masterOf(key(0));
    try {
      // One entry per partition, each read by a consumer that never acks: 6 pending, over the three masters.
      const keys = Array.from({ length: PARTITIONS }, (_, p) => Array.from({ length: 1000 }, (_, i) => `k${i}`).find((x) => partitionForKey(x, PARTITIONS) === p)!);
      for (let p = 0; p < PARTITIONS; p++) await raw.xgroup('CREATE', key(p), 'g', '0', 'MKSTREAM');
      await b.publishMany('order.created', orders(PARTITIONS), { key: (o) => keys[o.seq] });
      for (let p = 0; p < PARTITIONS; p++) await raw.xreadgroup('GROUP', 'g', 'dead', 'COUNT', 10, 'STREAMS', key(p), '>');
      const admin = await (b.transport as RedisStreamsTransport).admin();
      expect((await admin.pending('order.created', 'g')).total).toBe(PARTITIONS);
      expect(await admin.groups('order.created')).toMatchObject([{ group: 'g', pending: PARTITIONS }]);

      stalled.pause();
      try {
        await expect(admin.pending('order.created', 'g')).rejects.toBeInstanceOf(ConnectionError);
        await expect(admin.groups('order.created')).rejects.toBeInstanceOf(ConnectionError);
      } finally {
        stalled.resume();
      }
      // Back: the whole count again; a group that does not exist still counts as nothing.
      expect((await admin.pending('order.created', 'g')).total).toBe(PARTITIONS);
      expect(await admin.pending('order.created', 'nobody')).toEqual({ total: 0, consumers: {} });
    } finally {
      stalled.resume();
      raw.disconnect();
      await b.close();
    }
  }, 60_000);

  it('groupCounts counts events of batch entries over partitions on every master, and what a consumer holds as pending', async () => {
    const prefix = uniquePrefix('cluster-counts');
    const key = (p: number) => streamKey(prefix, 'order.created', p);
    const b = await createEventBus({ service: 'it', events, logger: false, transport: { type: 'redis-streams', cluster: { nodes: cluster().nodes }, prefix, partitions: PARTITIONS } });
    const raw = new Cluster(cluster().nodes);
    try {
      const keys = Array.from({ length: PARTITIONS }, (_, p) => Array.from({ length: 1000 }, (_, i) => `k${i}`).find((x) => partitionForKey(x, PARTITIONS) === p)!);
      for (let p = 0; p < PARTITIONS; p++) await raw.xgroup('CREATE', key(p), 'g', '0', 'MKSTREAM');
      // Ten events per partition, one batch entry each.
      await b.publishMany('order.created', orders(PARTITIONS * 10), { key: (o) => keys[o.seq % PARTITIONS] });
      const g = [{ type: 'order.created' as const, group: 'g' }];
      expect(await b.groupCounts({ groups: g })).toEqual([{ type: 'order.created', group: 'g', lagEvents: PARTITIONS * 10, pendingEvents: 0, estimated: false }]);
      for (let p = 0; p < 3; p++) await raw.xreadgroup('GROUP', 'g', 'holder', 'COUNT', 10, 'STREAMS', key(p), '>');
      expect(await b.groupCounts({ groups: g })).toEqual([{ type: 'order.created', group: 'g', lagEvents: 30, pendingEvents: 30, estimated: false }]);
    } finally {
      raw.disconnect();
      await b.close();
    }
  }, 60_000);
});

describe('redis-streams: cluster admin after a failover', () => {
  const replicated = clusterForTests(3, 1, 2000); // 3 masters, a replica each, 2 s node timeout

  it('listStreams right after a failover still finds the streams of the promoted replica', async () => {
    const prefix = uniquePrefix('cluster-admin-failover');
    const b = await createEventBus({ service: 'it', events, transport: { type: 'redis-streams', cluster: { nodes: replicated().nodes }, prefix, partitions: PARTITIONS, commandTimeoutMs: 15_000 } });
    try {
      await b.publishMany('order.created', orders(60), { key: (o) => o.orderId });
      const admin = await (b.transport as RedisStreamsTransport).admin();
      expect((await admin.listStreams()).map((s) => s.partition)).toEqual([0, 1, 2, 3, 4, 5]);
      await sleep(300); // replicated
      await replicated().failover(streamKey(prefix, 'order.created', 0));
      // The admin's client has not refreshed its slot map yet: it listed the promoted master as a replica.
      expect((await admin.listStreams()).map((s) => s.partition)).toEqual([0, 1, 2, 3, 4, 5]);
    } finally {
      await b.close();
    }
  }, 90_000);
});
