/**
 * message-size (seed 004, benchmark 5): produce throughput and MB/s for 64 B ... 16 KB payloads. On
 * Redis each size is compared with the pipelined-XADD baseline. (memory and noop do not encode
 * payloads, so size barely matters there; redis and native move the bytes.)
 */
import { pipelinedArrays } from '../baselines/redis.js';
import { sweep } from '../lib/config.js';
import { timedPublish } from '../lib/drive.js';
import type { Scenario, Variant } from '../lib/types.js';
import { isRedis, variant } from './helpers.js';
import { CPP_BROKER_MESSAGE_SIZE } from '../references.js';

const SEED = CPP_BROKER_MESSAGE_SIZE;

export const messageSize: Scenario = {
  name: 'message-size',
  title: 'Message size impact on publish throughput',
  seed: 'cpp-stream-processor',
  description: '20,000 events per size, 64 B / 256 B / 1 KB / 4 KB / 16 KB, publish() awaited per 1,000; events/s and MB/s.',
  transports: ['memory', 'native', 'redis', 'noop'],
  takes: ['messageCount', 'messageSize', 'batchSize', 'flushInterval', 'partitions'],
  defaults: { messageCount: 20_000, batchSize: 4000, flushInterval: 0, iterations: 3, warmup: 1 },
  quick: { messageCount: 5_000, iterations: 1, warmup: 1 },
  variants(c, explicit) {
    const out: Variant[] = [];
    for (const size of sweep(explicit, 'messageSize', c, [64, 256, 1024, 4096, 16384])) {
      const base = isRedis(c) ? `ioredis-${size}` : undefined;
      out.push(
        variant(c, `size-${size}`, `${size} B`, 'produce', { messageSize: size }, {}, { baseline: base, seed: SEED[size] ? { source: 'cpp-stream-processor', throughput: SEED[size] } : undefined }),
      );
      if (base) out.push(variant(c, base, `ioredis: pipelined XADD of ${c.batchSize}-event arrays, ${size} B`, 'pipelinedArrays', { messageSize: size }, { batch: c.batchSize }, { kind: 'baseline' }));
    }
    return out;
  },
  runners: {
    produce: (ctx) => timedPublish(ctx, 'publish-groups', 1000, 1),
    pipelinedArrays: (ctx) => pipelinedArrays(ctx, Number(ctx.variant.params['batch'])),
  },
};
