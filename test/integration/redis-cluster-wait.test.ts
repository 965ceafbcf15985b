/**
 * Redis Cluster with `waitForReplicas`, after a failover that left the old master down: the promoted master
 * has no replica, so every WAIT on it falls short after its timeout. Publishes to its partitions reject with
 * ReplicationError within their bound, however many follow each other; publishes to the other masters'
 * partitions resolve without waiting for them.
 */
import { describe, expect, it } from 'vitest';
import { createEventBus } from '../../src/index.js';
import { uniquePrefix } from '../helpers/redis-server.js';
import { clusterForTests } from '../helpers/redis-cluster.js';
import { sleep, waitFor } from '../helpers/wait.js';
import { partitionForKey } from '../../src/partition.js';
import { streamKey } from '../../transports/redis-streams/index.js';
import { events, order } from './redis-common.js';

// 3 masters with a replica each; the other masters serve while a failed master's slots are uncovered.
const cluster = clusterForTests(3, 1, 2000, false);

const PARTITIONS = 6;
const COMMAND_MS = 1500;
// Longer than the 200 ms after which a Cluster write frees its batcher slot and holds its partitions, so that
// writes queued behind a write's turn are still waiting when their own slots are freed.
const WAIT_MS = 600;

/** A key whose events go to partition `p`. */
function keyFor(p: number): string {
  return Array.from({ length: 1000 }, (_, i) => `k${i}`).find((k) => partitionForKey(k, PARTITIONS) === p)!;
}

interface Settled {
  partition: number;
  ms: number;
  code: string;
}

describe('redis-streams: cluster, waitForReplicas on a master without replica', () => {
  it('publishes to the promoted master reject with ReplicationError within their bound, the other masters resolve theirs at once', async () => {
    const prefix = uniquePrefix('cluster-wait-bound');
    const b = await createEventBus({
      service: 'it',
      events,
      transport: { type: 'redis-streams', cluster: { nodes: cluster().nodes }, prefix, partitions: PARTITIONS, commandTimeoutMs: COMMAND_MS, waitForReplicas: { count: 1, timeoutMs: WAIT_MS } },
    });
    try {
      const key = (p: number) => streamKey(prefix, 'order.created', p);
      for (let p = 0; p < PARTITIONS; p++) await b.publish('order.created', order(p), { key: keyFor(p) }); // connections up
      const promoted = await cluster().failover(key(0)); // the old master stays down
      const onPromoted: number[] = [];
      for (let p = 0; p < PARTITIONS; p++) if ((await cluster().masterOf(key(p))) === promoted) onPromoted.push(p);
      const outcome = (p: number) =>
        b.publish('order.created', order(p), { key: keyFor(p) }).then(
          () => 'ok',
          (e: { code?: string }) => e.code ?? String(e),
        );
      await waitFor(async () => (await outcome(0)) === 'ERR_REPLICATION', 30_000, 'the client to follow the failover');
      // Bursts of one publish per partition in one turn (one write touching every master), every 20 ms for 3 s.
      const settled: Settled[] = [];
      const all: Promise<unknown>[] = [];
      for (const t0 = Date.now(); Date.now() - t0 < 3000; await sleep(20)) {
        for (let p = 0; p < PARTITIONS; p++) {
          const at = Date.now();
          all.push(outcome(p).then((code) => settled.push({ partition: p, ms: Date.now() - at, code })));
        }
      }
      await Promise.race([Promise.all(all), sleep(30_000)]);
      expect(settled.length).toBe(all.length);
      const promotedOnes = settled.filter((s) => onPromoted.includes(s.partition));
      const others = settled.filter((s) => !onPromoted.includes(s.partition));
      // The promoted master's WAITs fall short: every publish to it reaches its WAIT and rejects with
      // ReplicationError. A write waits in its partitions' queue for at most about one WAIT (the XADDs ahead of
      // it wait behind the one out on their connection), well inside commandTimeoutMs, so none may reject
      // unsent with ConnectionError.
      expect(promotedOnes.length).toBeGreaterThan(0);
      expect(promotedOnes.filter((s) => s.code !== 'ERR_REPLICATION')).toEqual([]);
      expect(new Set(others.map((s) => s.code))).toEqual(new Set(['ok']));
      // Bound: commandTimeoutMs to be sent, then commandTimeoutMs + the WAIT timeout for the replies.
      expect(Math.max(...promotedOnes.map((s) => s.ms))).toBeLessThan(2 * COMMAND_MS + WAIT_MS);
      expect(Math.max(...others.map((s) => s.ms))).toBeLessThan(1000);
    } finally {
      await b.close();
    }
  }, 120_000);
});
