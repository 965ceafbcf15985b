/**
 * publish-overhead (issue 2 targets): what the library itself costs per event, through the batcher into
 * the `noop` transport with 128-byte payloads. Also shows what the harness can drive at most.
 */
import { benchBus } from '../lib/bus.js';
import { acceptedCount, drivePublish, publishMeasured, type PublishMode } from '../lib/drive.js';
import { sizedPayloads } from '../lib/payload.js';
import type { Scenario } from '../lib/types.js';
import { variant } from './helpers.js';

export const publishOverhead: Scenario = {
  name: 'publish-overhead',
  title: 'Library overhead: publish paths into the noop transport',
  seed: 'issue 2 (targets); 002 for scale',
  description: 'publish() awaited in groups of 1,000; publishMany with arrays of 1,000; 10,000 concurrent awaiting publishers. 128 B, noop.',
  transports: ['noop', 'memory', 'native', 'redis'],
  defaults: { messageCount: 1_000_000, messageSize: 128, batchSize: 4000, flushInterval: 0, publishers: 10_000, iterations: 3, warmup: 1 },
  quick: { messageCount: 300_000, iterations: 2, warmup: 1 },
  variants(c, explicit) {
    const pubs = explicit.has('publishers') ? c.publishers : 10_000;
    return [
      variant(c, 'publish-groups', 'publish() x1000, awaited per group', 'publish', {}, { mode: 'publish-groups', group: 1000 }, {
        seed: { source: 'issue 2 target', throughput: 3_000_000 },
      }),
      variant(c, 'publish-many', 'publishMany(1000)', 'publish', {}, { mode: 'publish-many', group: 1000 }, {
        seed: { source: 'issue 2 target', throughput: 5_000_000 },
      }),
      variant(c, 'concurrent', `${pubs.toLocaleString('en-US')} concurrent publishers`, 'publish', { publishers: pubs }, { mode: 'concurrent' }, {
        seed: { source: 'issue 2 target', throughput: 2_000_000, note: 'seed 002 (Go, no-op backend): 600K ops/s peak' },
      }),
    ];
  },
  runners: {
    async publish({ variant: v, config: c, timed }) {
      const payloads = sizedPayloads(c.messageCount, c.messageSize);
      const bus = await benchBus(c);
      try {
        await timed(() => drivePublish(bus, 'bench.sized', payloads, v.params['mode'] as PublishMode, Number(v.params['group'] ?? 1000), v.params['mode'] === 'concurrent' ? c.publishers : 1));
        const acc = acceptedCount(bus);
        return publishMeasured(payloads.length, c.messageSize, { received: acc.count, by: acc.by });
      } finally {
        await bus.close();
      }
    },
  },
};
