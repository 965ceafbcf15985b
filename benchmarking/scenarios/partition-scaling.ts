/**
 * partition-scaling (seed 000): 10,000 events, ~1 ms of CPU busy loop each, 1/2/4/8 partitions with
 * one consumer per partition. On memory every handler runs on the main thread, so this shows the
 * single-thread ceiling (~1,000/s); on native the handlers run on one worker thread per partition, with the
 * addon (`implementation: 'native'`) and, in the same run, the pure-JS fallback (`implementation: 'js'`): the
 * addon row of N partitions is compared with the JS-fallback row of N partitions (its baseline).
 */
import { fileURLToPath } from 'node:url';
import { publishAndWork, publishAndWorkInWorkers } from '../lib/consume-run.js';
import { sweep } from '../lib/config.js';
import type { Scenario, Variant } from '../lib/types.js';
import { variant } from './helpers.js';
import { CPP_BUS_PARTITION_SCALING } from '../references.js';

const SEED = CPP_BUS_PARTITION_SCALING;

/** Worker-thread handler module used with the native transport (`workers` + `handler` subscribe options). */
const BUSY_HANDLER = fileURLToPath(new URL('../workers/busy-handler.mjs', import.meta.url));

export const partitionScaling: Scenario = {
  name: 'partition-scaling',
  title: 'Partition scaling with CPU-bound handlers',
  seed: 'cpp-bus',
  description: '10,000 events x ~1 ms busy-loop work; 1/2/4/8 partitions, one consumer each; throughput from first publish to last handler.',
  transports: ['memory', 'native', 'redis'],
  takes: ['messageCount', 'messageSize', 'batchSize', 'flushInterval', 'partitions'],
  defaults: { messageCount: 10_000, messageSize: 64, batchSize: 4000, flushInterval: 0, iterations: 3, warmup: 0 },
  quick: { messageCount: 1_000, iterations: 1, warmup: 0 },
  variants(c, explicit) {
    return sweep(explicit, 'partitions', c, [1, 2, 4, 8]).flatMap((p): Variant[] => {
      const label = `${p} partition${p > 1 ? 's' : ''}, ${p} consumer${p > 1 ? 's' : ''}`;
      const layout = { partitions: p, consumers: p };
      const seed = SEED[p] ? { source: 'cpp-bus', throughput: SEED[p], setup: { messageCount: 10_000 } } : undefined;
      if (c.transport !== 'native') return [variant(c, `${p}p`, label, 'work', layout, { workMs: 1 }, { seed })];
      return [
        variant(c, `${p}p`, `${label} (addon)`, 'work', layout, { workMs: 1, implementation: 'native' }, { seed, baseline: `${p}p-js` }),
        variant(c, `${p}p-js`, `${label} (JS fallback)`, 'work', layout, { workMs: 1, implementation: 'js' }, { kind: 'baseline', seed }),
      ];
    });
  },
  runners: {
    work: (ctx) => {
      const workMs = Number(ctx.variant.params['workMs'] ?? 1);
      const implementation = ctx.variant.params['implementation'];
      return ctx.config.transport === 'native' ? publishAndWorkInWorkers(ctx, workMs, ctx.config.consumers, BUSY_HANDLER, { implementation }) : publishAndWork(ctx, workMs);
    },
  },
};
