/**
 * broker-throughput (seed 004, benchmarks 1 and 2): produce 50,000 100-byte events on 4 partitions,
 * consume them back, and producer scaling with 1/2/4/8 concurrent publishers of 10,000 events each.
 */
import { prefillThenConsume } from '../lib/consume-run.js';
import { timedPublish } from '../lib/drive.js';
import type { Scenario, Variant } from '../lib/types.js';
import { variant } from './helpers.js';
import { CPP_BROKER_CONSUME, CPP_BROKER_PRODUCE, CPP_BROKER_PRODUCER_SCALING } from '../references.js';

const SCALING = CPP_BROKER_PRODUCER_SCALING;

export const brokerThroughput: Scenario = {
  name: 'broker-throughput',
  title: 'Broker throughput: produce, consume, producer scaling',
  seed: 'cpp-stream-processor',
  description: '50,000 x 100 B on 4 partitions: produce (publish() awaited per 1,000) and consume (1 consumer); 1/2/4/8 publishers x 10,000.',
  transports: ['memory', 'native', 'redis', 'noop'],
  takes: ['messageCount', 'messageSize', 'batchSize', 'flushInterval', 'publishers', 'consumers', 'partitions'],
  defaults: { messageCount: 50_000, messageSize: 100, partitions: 4, batchSize: 4000, flushInterval: 0, iterations: 3, warmup: 1 },
  quick: { messageCount: 20_000, iterations: 1, warmup: 1 },
  variants(c, explicit) {
    const out: Variant[] = [
      variant(
        c,
        'produce',
        `produce ${c.messageCount.toLocaleString('en-US')}, 1 publisher`,
        'produce',
        { publishers: 1 },
        {},
        {
          seed: { source: 'cpp-stream-processor', throughput: CPP_BROKER_PRODUCE },
        },
      ),
    ];
    if (c.transport !== 'noop') {
      out.push(
        variant(
          c,
          'consume',
          `consume ${c.messageCount.toLocaleString('en-US')}, ${c.consumers} consumer`,
          'consume',
          {},
          {},
          { seed: { source: 'cpp-stream-processor', throughput: CPP_BROKER_CONSUME } },
        ),
      );
    }
    const pubs = explicit.has('publishers') ? [c.publishers] : [1, 2, 4, 8];
    for (const p of pubs) {
      out.push(
        variant(
          c,
          `producers-${p}`,
          `${p} publisher${p > 1 ? 's' : ''} x 10,000`,
          'produce',
          { publishers: p, messageCount: 10_000 * p },
          {},
          {
            seed: SCALING[p] ? { source: 'cpp-stream-processor', throughput: SCALING[p] } : undefined,
          },
        ),
      );
    }
    return out;
  },
  runners: {
    produce: (ctx) => timedPublish(ctx, 'publish-groups', 1000, ctx.config.publishers),
    consume: (ctx) => prefillThenConsume(ctx),
  },
};
