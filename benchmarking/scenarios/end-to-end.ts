/**
 * end-to-end (issue 3 target): publish call -> handler start through Redis at a steady 10,000
 * events/s (open loop, from the intended send time), one consumer, 128 B payloads. On Redis it is
 * compared with a hand-written ioredis loop doing the same work (baselines/redis-latency.ts), and measured
 * beside the peer rows (benchmarking/peers/) at the same rate.
 */
import { redisEndToEnd } from '../baselines/redis-latency.js';
import { latencyRun } from '../lib/latency-run.js';
import type { Scenario, Variant } from '../lib/types.js';
import { peerRows, peerRunners } from '../peers/index.js';
import { isRedis, variant } from './helpers.js';

export const endToEnd: Scenario = {
  name: 'end-to-end',
  title: 'End-to-end latency through the transport at a steady rate',
  seed: 'target-issue-3',
  description: 'publish() -> handler start at --rate events/s (default 10,000), open loop, 1 consumer, 128 B; on Redis vs an ioredis XADD -> XREADGROUP loop.',
  transports: ['redis', 'native', 'memory'],
  takes: ['messageCount', 'messageSize', 'rate', 'batchSize', 'flushInterval', 'consumers', 'partitions'],
  defaults: { messageCount: 50_000, messageSize: 128, rate: 10_000, batchSize: 4000, flushInterval: 0, consumers: 1, iterations: 3, warmup: 1 },
  quick: { messageCount: 10_000, iterations: 1, warmup: 0 },
  variants(c) {
    const consumers = `${c.consumers} consumer${c.consumers > 1 ? 's' : ''}`;
    const rate = `${c.rate.toLocaleString('en-US')}/s`;
    // The baseline writes one stream: with more partitions the library's work is not the same.
    const baseline: Variant | undefined =
      isRedis(c) && c.partitions === 1
        ? variant(c, 'ioredis-xadd-xreadgroup', `ioredis: XADD per event of the same entries -> XREADGROUP COUNT 1000 + XACK, ${consumers}, ${rate}`, 'baseline', {}, {}, { kind: 'baseline' })
        : undefined;
    const ours = variant(
      c,
      'steady',
      `${consumers}, ${rate}`,
      'e2e',
      {},
      {},
      {
        baseline: baseline?.id,
        seed: { source: 'target-issue-3', latencyUs: { p50: 250, p99: 1000 } },
      },
    );
    return [ours, ...(baseline ? [baseline] : []), ...peerRows(c, 'latency')];
  },
  runners: {
    e2e: (ctx) => latencyRun(ctx, { payload: 'sized', open: true }),
    baseline: redisEndToEnd,
    ...peerRunners('latency'),
  },
};
