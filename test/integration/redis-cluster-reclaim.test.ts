/**
 * Redis Cluster: a consumer's reclaim of dead consumers' entries goes on for the partitions whose masters
 * answer while another master does not (stalled, or dead and not failed over yet); suspects are claimed alone
 * (a MULTI on the partition's slot), trimmed ones reported.
 */
import { describe, expect, it } from 'vitest';
import { Cluster } from 'ioredis';
import { createEventBus } from '../../src/index.js';
import { uniquePrefix } from '../helpers/redis-server.js';
import { clusterForTests } from '../helpers/redis-cluster.js';
import { waitFor } from '../helpers/wait.js';
import { partitionForKey } from '../../src/partition.js';
import { streamKey } from '../../transports/redis-streams/index.js';
import { events, order, orders, warningLogger } from './redis-common.js';

const PARTITIONS = 6;

// A long node timeout: a stalled master stays the slot's master (no failover) for the whole test.
const cluster = clusterForTests(3, 0, 60_000);

describe('redis-streams: cluster reclaim', () => {
  it("reclaims a dead consumer's entries on the other masters' partitions while one master is stalled", async () => {
    const prefix = uniquePrefix('cluster-reclaim');
    const key = (p: number) => streamKey(prefix, 'order.created', p);
    const stalled = await cluster().masterOf(key(0));
    let q = -1;
    for (let p = 1; p < PARTITIONS && q < 0; p++) if ((await cluster().masterOf(key(p))) !== stalled) q = p;
    expect(q).toBeGreaterThan(0);
    const k = Array.from({ length: 1000 }, (_, i) => `k${i}`).find((x) => partitionForKey(x, PARTITIONS) === q)!;

    const b = await createEventBus({ service: 'it', events, transport: { type: 'redis-streams', cluster: { nodes: cluster().nodes }, prefix, partitions: PARTITIONS, commandTimeoutMs: 1500 } });
    const raw = new Cluster(cluster().nodes);
    try {
      // A consumer that read an entry of 10 events of partition q and died without acking it.
      await raw.xgroup('CREATE', key(q), 'g', '0', 'MKSTREAM');
      await b.publishMany('order.created', orders(10), { key: () => k });
      const read = (await raw.xreadgroup('GROUP', 'g', 'dead', 'COUNT', 100, 'STREAMS', key(q), '>')) as [string, unknown[]][];
      expect(read[0]![1]).toHaveLength(1); // one batch entry

      const seen = new Set<number>();
      await b.subscribe('order.created', { group: 'g', consumer: 'live', blockMs: 200, minIdleMs: 1000 }, (e) => void seen.add(e.data.seq));
      // Partition 0's master stops answering; q's master is fine.
      stalled.pause();
      try {
        await waitFor(() => seen.size === 10, 15_000, "the dead consumer's entries of partition " + q);
      } finally {
        stalled.resume();
      }
    } finally {
      stalled.resume();
      raw.disconnect();
      await b.close();
    }
  }, 60_000);

  it('claims suspects alone through the Cluster client, and reports those trimmed while pending', async () => {
    const prefix = uniquePrefix('cluster-suspect');
    const key = streamKey(prefix, 'order.created', 0);
    const raw = new Cluster(cluster().nodes);
    const logger = warningLogger();
    const b = await createEventBus({ service: 'it', events, logger, transport: { type: 'redis-streams', cluster: { nodes: cluster().nodes }, prefix, partitions: 1 } });
    try {
      await raw.xgroup('CREATE', key, 'g', '0', 'MKSTREAM');
      for (let i = 0; i < 3; i++) await raw.xadd(key, '*', 'data', JSON.stringify(order(i)));
      // Read twice by a consumer that died with them (suspects), the first two then trimmed.
      await raw.xreadgroup('GROUP', 'g', 'dead', 'COUNT', 3, 'STREAMS', key, '>');
      await raw.xreadgroup('GROUP', 'g', 'dead', 'COUNT', 3, 'STREAMS', key, '0');
      await raw.xtrim(key, 'MAXLEN', 1);
      const seen: string[] = [];
      await b.subscribe('order.created', { group: 'g', consumer: 'live', blockMs: 200, minIdleMs: 200 }, (e, ctx) => void seen.push(`${e.data.seq}@${ctx.attempt}`));
      await waitFor(() => seen.length === 1, 10_000, 'the surviving suspect');
      expect(seen).toEqual(['2@3']);
      const reports = () => logger.warnings.filter((w) => w.msg?.startsWith('pending entries were trimmed'));
      await waitFor(() => reports().length > 0, 5000, 'the trimmed ones reported');
      expect(reports().map((w) => w.obj)).toEqual([{ group: 'g', stream: key, count: 2 }]);
    } finally {
      raw.disconnect();
      await b.close();
    }
  }, 60_000);
});
