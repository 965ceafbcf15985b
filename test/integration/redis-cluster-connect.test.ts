/**
 * Redis Cluster: opening connections while one master is stalled (SIGSTOP, no failover yet). ioredis sends a
 * Cluster client's ready check, and the transport its PING after it, to a node of its choosing: the stalled
 * master may make a connect fail (a typed error after commandTimeoutMs), but must not hold a bus's creation or
 * a subscription forever. And a read whose node connection dies with its reply: what Redis handed to it is
 * delivered from the consumer's own pending list after the Cluster client reconnects to that node.
 */
import { describe, expect, it } from 'vitest';
import { createEventBus, EventlaneError, type EventBus } from '../../src/index.js';
import { uniquePrefix, withRedis } from '../helpers/redis-server.js';
import { clusterForTests } from '../helpers/redis-cluster.js';
import { TIMED_OUT, waitFor, within } from '../helpers/wait.js';
import { streamKey } from '../../transports/redis-streams/index.js';
import { events, loseServedRead } from './redis-common.js';

// A long node timeout: the stalled master stays its slots' master (no failover) for the whole test.
const cluster = clusterForTests(3, 0, 60_000);

describe('redis-streams: cluster connect', () => {
  it('creating a bus and subscribing settle (typed) while a master is stalled', async () => {
    const transport = (prefix: string) => ({ type: 'redis-streams', cluster: { nodes: cluster().nodes }, prefix, partitions: 6, commandTimeoutMs: 1000 });
    const stalled = await cluster().masterOf(streamKey(uniquePrefix('probe'), 'order.created', 0));
    // A bus made before the stall: its subscribe meets the stalled master whether or not a bus can be made during it.
    const before = await createEventBus({ service: 'it', events, transport: transport(uniquePrefix('cluster-connect')) });
    const open: EventBus<typeof events>[] = [before];
    const subscribed = (b: EventBus<typeof events>) =>
      within(
        b
          .subscribe('order.created', { group: 'g', blockMs: 200 }, () => undefined)
          .then(
            () => 'subscribed',
            (err: unknown) => (err instanceof EventlaneError ? `rejected: ${err.code}` : `untyped: ${String(err)}`),
          ),
        15_000,
      );
    stalled.pause();
    try {
      const sub = await subscribed(before);
      expect(sub, 'subscribe on the bus made before the stall').not.toBe(TIMED_OUT);
      expect(sub).not.toMatch(/^untyped/);
      // Which node a PING goes to is ioredis's choice: several rounds, each with a pool, a command and reader clients.
      for (let round = 0; round < 4; round++) {
        const made = await within(
          createEventBus({ service: 'it', events, transport: transport(uniquePrefix('cluster-connect')) }).catch((err: unknown) =>
            err instanceof EventlaneError ? `rejected: ${err.code}` : `untyped: ${String(err)}`,
          ),
          12_000,
        );
        expect(made, `round ${round}: createEventBus`).not.toBe(TIMED_OUT);
        if (typeof made === 'string') {
          expect(made).toBe('rejected: ERR_CONNECTION');
          continue;
        }
        open.push(made);
        const again = await subscribed(made);
        expect(again, `round ${round}: subscribe`).not.toBe(TIMED_OUT);
        expect(again).not.toMatch(/^untyped/);
      }
    } finally {
      stalled.resume();
      await Promise.allSettled(open.map((b) => b.close()));
    }
  }, 180_000);
});

describe('redis-streams: cluster read connection', () => {
  it('delivers what Redis handed to a read lost with its node connection after the reconnect, not after minIdleMs', async () => {
    const prefix = uniquePrefix('cluster-lostreply');
    const key = streamKey(prefix, 'order.created', 0);
    const master = await cluster().masterOf(key);
    const b = await createEventBus({ service: 'it', events, transport: { type: 'redis-streams', cluster: { nodes: cluster().nodes }, prefix, partitions: 1 } });
    try {
      const seen: string[] = [];
      await b.subscribe('order.created', { group: 'g', consumer: 'c', blockMs: 1000, minIdleMs: 60_000 }, (e, ctx) => void seen.push(`${e.data.seq}@${ctx.attempt}`));
      // One write to the partition's master: its blocked read served by an XADD, then killed before the reply is written.
      await withRedis(master.port, (c) => loseServedRead(c, key, 7, 'c'));
      // The Cluster client sends the read again ('>') on a new connection to the node ('-node', not 'ready'); once it
      // returns, the reader drains its pending list, so seq 7 does not wait for the reclaim, minIdleMs (60 s) later.
      await waitFor(() => seen.length === 1, 8000, 'seq 7 after the reconnect');
      expect(seen).toEqual(['7@2']);
    } finally {
      await b.close();
    }
  }, 60_000);
});
