/**
 * Redis Cluster: close() of a subscription returns while a master stays stalled. A read connection that the
 * watchdog replaced is reopened by the read loop, and opening a Cluster client can wait on the stalled master
 * for as long as it is stalled; close() must not wait for that.
 */
import { describe, expect, it } from 'vitest';
import { createEventBus } from '../../src/index.js';
import { uniquePrefix } from '../helpers/redis-server.js';
import { clusterForTests } from '../helpers/redis-cluster.js';
import { boundedClose, sleep } from '../helpers/wait.js';
import { streamKey } from '../../transports/redis-streams/index.js';
import { events } from './redis-common.js';

// A long node timeout: a stalled master stays the slot's master (no failover) for the whole test.
const cluster = clusterForTests(3, 0, 60_000);

describe('redis-streams: cluster close', () => {
  it('close() returns while a master is stalled and the read loop is reopening its connection', async () => {
    // Each round: a subscription whose partitions' reads on the stalled master outlive the watchdog (blockMs plus
    // half of commandTimeoutMs: 700 ms), so
    // their readers keep reopening; whether an attempt then waits on the stalled master is chance (ioredis
    // picks a node at random), hence several rounds.
    for (let round = 0; round < 3; round++) {
      const prefix = uniquePrefix('cluster-close');
      const b = await createEventBus({
        service: 'it',
        events,
        transport: { type: 'redis-streams', cluster: { nodes: cluster().nodes }, prefix, partitions: 6, commandTimeoutMs: 1000 },
      });
      await b.subscribe('order.created', { group: 'g', blockMs: 200, minIdleMs: 1000 }, () => undefined);
      const stalled = await cluster().masterOf(streamKey(prefix, 'order.created', 0));
      stalled.pause();
      try {
        await sleep(4000);
        expect(await boundedClose(b, 10_000)).toBe('closed');
      } finally {
        stalled.resume();
      }
      await b.close();
    }
  }, 120_000);
});
