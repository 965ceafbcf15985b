/**
 * consumer-groups (seed 004, benchmark 6): 20,000 prefilled events on 4 partitions consumed by 1/2/4/8
 * members of one group, no-op handler, acks included. On Redis also per-event entries (entryMode
 * 'event') with 1 consumer against a hand-written XREADGROUP COUNT 1000 + XACK loop over the same entries
 * (issue 3 target), and, for scale, the same loop over minimal one-field entries; and the issue 3 consume
 * target (1 consumer, batched entries) over 200,000 events; and the peer rows (benchmarking/peers/) consuming
 * the same prefilled events.
 */
import { readGroupAck } from '../baselines/redis.js';
import { sweep } from '../lib/config.js';
import { prefillThenConsume } from '../lib/consume-run.js';
import type { Scenario, Variant } from '../lib/types.js';
import { peerRows, peerRunners } from '../peers/index.js';
import { isRedis, variant } from './helpers.js';
import { CPP_BROKER_CONSUMER_GROUPS } from '../references.js';

const SEED = CPP_BROKER_CONSUMER_GROUPS;

export const consumerGroups: Scenario = {
  name: 'consumer-groups',
  title: 'Consumer group throughput: prefilled events, N members, acks included',
  seed: 'cpp-stream-processor, target-issue-3',
  description: '20,000 events (100 B), 4 partitions, 1/2/4/8 consumers in one group; on Redis also per-event entries vs XREADGROUP+XACK.',
  transports: ['memory', 'native', 'redis'],
  takes: ['messageCount', 'messageSize', 'batchSize', 'flushInterval', 'consumers', 'partitions'],
  defaults: { messageCount: 20_000, messageSize: 100, partitions: 4, batchSize: 4000, flushInterval: 0, iterations: 3, warmup: 1 },
  quick: { messageCount: 10_000, iterations: 1, warmup: 1 },
  variants(c, explicit) {
    const out: Variant[] = sweep(explicit, 'consumers', c, [1, 2, 4, 8]).map((k) =>
      variant(
        c,
        `${k}c`,
        `${c.partitions} partitions, ${k} consumer${k > 1 ? 's' : ''}`,
        'consume',
        { consumers: k },
        {},
        {
          seed: SEED[k] ? { source: 'cpp-stream-processor', throughput: SEED[k] } : undefined,
        },
      ),
    );
    if (isRedis(c)) {
      // The issue 3 consume target (batched entries, one consumer, acks included) over a window long enough to
      // measure reading rather than subscribe set-up (20,000 events are read in less time than the set-up takes).
      if (!explicit.has('consumers') && !explicit.has('messageCount')) {
        out.push(
          variant(
            c,
            'issue3-1c',
            `${c.partitions} partitions, 1 consumer, 200,000 events`,
            'consume',
            { consumers: 1, messageCount: 200_000 },
            {},
            {
              seed: { source: 'target-issue-3', throughput: 1_000_000 },
            },
          ),
        );
      }
      out.push(
        variant(c, 'per-event-1c', '1 partition, 1 consumer, per-event entries', 'consume', { consumers: 1, partitions: 1 }, { entryMode: 'event' }, { baseline: 'ioredis-xreadgroup' }),
        variant(
          c,
          'ioredis-xreadgroup',
          'ioredis: XREADGROUP COUNT 1000 + XACK loop over the same per-event entries',
          'readGroupAck',
          { consumers: 1, partitions: 1 },
          { entries: 'envelope' },
          { kind: 'baseline' },
        ),
        variant(
          c,
          'ioredis-xreadgroup-minimal',
          'ioredis: the same loop over one-field entries (d = JSON)',
          'readGroupAck',
          { consumers: 1, partitions: 1 },
          { entries: 'minimal' },
          { kind: 'baseline' },
        ),
        ...peerRows(c, 'consume'),
      );
    }
    return out;
  },
  runners: {
    consume: (ctx) => prefillThenConsume(ctx, ctx.variant.params['entryMode'] ? { entryMode: ctx.variant.params['entryMode'] } : {}),
    readGroupAck,
    ...peerRunners('consume'),
  },
};
