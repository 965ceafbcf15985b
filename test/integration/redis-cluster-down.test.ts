/**
 * Redis Cluster with a master gone and no replica to take over: the cluster declares itself down (CLUSTERDOWN
 * from every node, cluster-require-full-coverage) and publishes reject with one error class, ConnectionError
 * (retryable), whichever way ioredis reports it.
 */
import { describe, expect, it } from 'vitest';
import { ConnectionError, createEventBus, PublishPartialError } from '../../src/index.js';
import { uniquePrefix, withRedis } from '../helpers/redis-server.js';
import { clusterForTests } from '../helpers/redis-cluster.js';
import { waitFor } from '../helpers/wait.js';
import { events, orders } from './redis-common.js';

describe('redis-streams: a cluster that is down', () => {
  const cluster = clusterForTests(3, 0, 1000); // no replicas, 1 s node timeout: down soon after a master dies

  it('publishes reject with ConnectionError (retryable), not TransportError for CLUSTERDOWN and ConnectionError for the dead node', async () => {
    const c = cluster();
    const b = await createEventBus({ service: 'it', events, transport: { type: 'redis-streams', cluster: { nodes: c.nodes }, prefix: uniquePrefix('down'), partitions: 6, commandTimeoutMs: 2000 } });
    try {
      await b.publishMany('order.created', orders(12)); // every partition, on every master
      await c.servers[0]!.crash();
      const alive = c.servers[1]!;
      await waitFor(async () => String(await withRedis(alive.port, (r) => r.call('CLUSTER', 'INFO'))).includes('cluster_state:fail'), 15_000, 'the cluster to declare itself down');
      const outcomes = await Promise.allSettled(orders(6).map((o) => b.publish('order.created', o))); // round-robin: every partition
      const reasons = outcomes.map((o) => (o.status === 'rejected' ? o.reason : 'resolved'));
      for (const r of reasons) {
        expect(r, String(r)).toBeInstanceOf(ConnectionError);
        expect((r as ConnectionError).retryable).toBe(true);
      }
      // publishMany: one error for the call when every unit failed alike, else per unit; ConnectionError either way.
      const many = await b.publishMany('order.created', orders(6)).catch((e: unknown) => e);
      for (const e of many instanceof PublishPartialError ? many.errors : [many]) expect(e, String(e)).toBeInstanceOf(ConnectionError);
    } finally {
      await b.close();
    }
  }, 60_000);
});
