/**
 * publish-overhead (issue 2 targets): what the library itself costs per event, through the batcher into
 * the `noop` transport with 128-byte payloads. Also shows what the harness can drive at most.
 */
import { timedPublish, type PublishMode } from '../lib/drive.js';
import type { Scenario } from '../lib/types.js';
import { variant } from './helpers.js';

export const publishOverhead: Scenario = {
  name: 'publish-overhead',
  title: 'Library overhead: publish paths into the noop transport',
  seed: 'target-issue-2, go-batcher',
  description: 'publish() awaited in groups of 1,000; publishMany with arrays of 1,000; 10,000 concurrent awaiting publishers. 128 B, noop.',
  transports: ['noop', 'memory', 'native', 'redis'],
  takes: ['messageCount', 'messageSize', 'batchSize', 'flushInterval', 'publishers', 'partitions'],
  defaults: { messageCount: 1_000_000, messageSize: 128, batchSize: 4000, flushInterval: 0, publishers: 10_000, iterations: 3, warmup: 1 },
  quick: { messageCount: 300_000, iterations: 2, warmup: 1 },
  variants(c, explicit) {
    const pubs = explicit.has('publishers') ? c.publishers : 10_000;
    return [
      variant(
        c,
        'publish-groups',
        'publish() x1000, awaited per group',
        'publish',
        {},
        { mode: 'publish-groups', group: 1000 },
        {
          seed: { source: 'target-issue-2', throughput: 3_000_000 },
        },
      ),
      variant(
        c,
        'publish-many',
        'publishMany(1000)',
        'publish',
        {},
        { mode: 'publish-many', group: 1000 },
        {
          seed: { source: 'target-issue-2', throughput: 5_000_000 },
        },
      ),
      variant(
        c,
        'concurrent',
        `${pubs.toLocaleString('en-US')} concurrent publishers`,
        'publish',
        { publishers: pubs },
        { mode: 'concurrent' },
        {
          seed: { source: 'target-issue-2', throughput: 2_000_000, note: 'Go write-batching layer (no-op backend): 600K ops/s peak' },
        },
      ),
    ];
  },
  runners: {
    publish: (ctx) => {
      const mode = ctx.variant.params['mode'] as PublishMode;
      return timedPublish(ctx, mode, Number(ctx.variant.params['group'] ?? 1000), mode === 'concurrent' ? ctx.config.publishers : 1);
    },
  },
};
