/**
 * Redis Cluster: the record of a type's partition count (`<prefix>:{<type>:0}:meta`) lives in the slot of the
 * type's partition 0, so recording, reading and raising it are single-key commands (no CROSSSLOT) on a
 * 3-master cluster; buses starting together agree on one count, and a raise reaches a running consumer whose
 * new partitions live on other masters.
 */
import { describe, expect, it } from 'vitest';
import { Cluster } from 'ioredis';
import { ConfigError, createEventBus, type EventBus } from '../../src/index.js';
import { uniquePrefix } from '../helpers/redis-server.js';
import { clusterForTests } from '../helpers/redis-cluster.js';
import { waitFor } from '../helpers/wait.js';
import { openRedisStreamsAdmin, streamKey } from '../../transports/redis-streams/index.js';
import { slotOf } from '../../transports/redis-streams/wire-command.js';
import { events, fastRead, orders } from './redis-common.js';

const cluster = clusterForTests(3, 0, 60_000);

describe('redis-streams: cluster partition records', () => {
  it('buses starting together agree on the count; a mismatch is refused; a raise is followed across masters', async () => {
    const prefix = uniquePrefix('cluster-meta');
    const nodes = cluster().nodes;
    const open = (partitions?: number): Promise<EventBus<typeof events>> =>
      createEventBus({ service: 'it', events, logger: false, transport: { type: 'redis-streams', cluster: { nodes }, prefix, partitionsCheckMs: 100, ...(partitions ? { partitions } : {}) } });
    const buses: EventBus<typeof events>[] = [];
    const raw = new Cluster(nodes);
    try {
      // Two configured alike at once: one SET NX wins and the other reads it; one with none set takes it.
      buses.push(...(await Promise.all([open(3), open(3)])), await open());
      expect(buses.map((b) => b.transport.partitionsFor('order.created'))).toEqual([3, 3, 3]);
      const key = `${prefix}:{order.created:0}:meta`;
      expect(slotOf(key)).toBe(slotOf(streamKey(prefix, 'order.created', 0)));
      expect(JSON.parse((await raw.get(key))!)).toEqual({ v: 1, partitions: 3 });
      await expect(open(6)).rejects.toBeInstanceOf(ConfigError);

      const [producer, , consumer] = buses as [EventBus<typeof events>, EventBus<typeof events>, EventBus<typeof events>];
      const seen = new Set<number>();
      await consumer.subscribe('order.created', { group: 'g', ...fastRead }, (e) => void seen.add(e.data.seq));
      const { admin, close } = await openRedisStreamsAdmin({ cluster: { nodes }, prefix });
      try {
        expect(await admin.setPartitions('order.created', 9)).toEqual({ from: 3, partitions: 9 });
        await expect(admin.setPartitions('order.created', 4)).rejects.toBeInstanceOf(ConfigError);
      } finally {
        await close();
      }
      await waitFor(() => buses.every((b) => b.transport.partitionsFor('order.created') === 9), 5_000, 'every bus to follow the raise');
      await producer.publishMany('order.created', orders(90));
      await waitFor(() => seen.size === 90, 15_000, 'every event, over the 9 partitions');
      // The new partitions' streams are spread over the masters, and the group reads each of them.
      const masters = new Set(await Promise.all([3, 4, 5, 6, 7, 8].map(async (p) => (await cluster().masterOf(streamKey(prefix, 'order.created', p))).port)));
      expect(masters.size).toBeGreaterThan(1);
      await consumer.idle({ timeoutMs: 10_000 });
    } finally {
      raw.disconnect();
      await Promise.allSettled(buses.map((b) => b.close()));
    }
  }, 90_000);
});
