/**
 * latency-burst (seed 001): 15,000 40-byte trading events published at once into a partition of 16K
 * capacity, consumers already running, no-op handler; 1 partition / 1 consumer and 4 / 4. Latency from
 * each publish() call to handler start (closed loop).
 *
 * On native, each layout with one consumer thread per partition has a machine-floor row beside it (a baseline):
 * the native core driven by C++ threads only (`floor-run.ts`), the same burst after the same 50 ms idle, each
 * event timed from its push. What the machine itself does with a burst (waking idle consumer threads, four
 * consumer threads on two cores) is then in the same run as the rows that go through JS.
 */
import { availableParallelism } from 'node:os';
import { floorRowsAvailable, latencyFloorRun } from '../lib/floor-run.js';
import { latencyRun, QUIET_BEFORE_BURST_MS } from '../lib/latency-run.js';
import type { BenchConfig, Scenario, SeedFigure, Variant } from '../lib/types.js';
import { variant } from './helpers.js';
import { CPP_BUS_BURST } from '../references.js';

/** Seed 001's figures for 1 producer / 1 consumer and 4 / 4. */
const SEED_1P1C: SeedFigure = CPP_BUS_BURST['1p1c'];
const SEED_4P4C: SeedFigure = CPP_BUS_BURST['4p4c'];

/** The machine-floor row (a baseline) beside the JS row `label`: the same burst through the native core, C++ threads only. */
function floorRow(c: BenchConfig, id: string, label: string, layout: Partial<BenchConfig>, params: Variant['params'], seed: SeedFigure | undefined): Variant {
  const floorLabel = `C++ threads, no JS: the native core, ${label}, one burst after ${QUIET_BEFORE_BURST_MS} ms idle (machine floor)`;
  return variant(c, id, floorLabel, 'floor', layout, params, { kind: 'baseline', seed });
}

export const latencyBurst: Scenario = {
  name: 'latency-burst',
  title: (c) => `Burst latency: ${c.messageCount.toLocaleString('en-US')} events published at once into a partition`,
  seed: 'cpp-bus',
  description: '15,000 trading events {"id":N,"sym":"AAPL","px":150.25,"qty":100} in one burst; 1P/1C and 4P/4C; publish -> handler start.',
  transports: ['memory', 'native', 'redis'],
  takes: ['messageCount', 'batchSize', 'flushInterval', 'partitions', 'consumers'],
  defaults: { messageCount: 15_000, messageSize: 40, batchSize: 4000, flushInterval: 0, iterations: 3, warmup: 1 },
  quick: { iterations: 2, warmup: 0 },
  variants(c, explicit) {
    const pc =
      explicit.has('partitions') || explicit.has('consumers')
        ? [[c.partitions, c.consumers]]
        : [
            [1, 1],
            [4, 4],
          ];
    // The machine-floor rows need the benchmark addon; without it they are left out, and the rows beside them link to none.
    const floors = c.transport === 'native' && pc.some(([p, k]) => p === k) && floorRowsAvailable();
    const rows = pc.flatMap(([p, k]) => {
      const label = `${p} partition${p! > 1 ? 's' : ''} / ${k} consumer${k! > 1 ? 's' : ''}`;
      const seed = p === 1 && k === 1 ? SEED_1P1C : p === 4 && k === 4 ? SEED_4P4C : undefined;
      // native, one consumer thread per partition: beside it the machine floor of the same layout (a baseline).
      const floor = floors && p === k ? `${p}p${k}c-floor` : undefined;
      const row = variant(c, `${p}p${k}c`, label, 'burst', { partitions: p!, consumers: k! }, {}, { seed, baseline: floor });
      return floor ? [row, floorRow(c, floor, label, { partitions: p!, consumers: k! }, {}, seed)] : [row];
    });
    // native: the same 1P/1C with batches of 256. A synchronous burst never yields, so a batch leaves only
    // when it is full: maxEvents bounds how long the first event of each batch waits.
    if (c.transport === 'native' && !explicit.has('batchSize') && pc.some(([p, k]) => p === 1 && k === 1)) {
      rows.push(
        variant(
          c,
          '1p1c-batch256',
          '1 partition / 1 consumer, batches of 256 (maxEvents)',
          'burst',
          { partitions: 1, consumers: 1, batchSize: 256 },
          {},
          {
            seed: SEED_1P1C,
            baseline: floors ? '1p1c-floor' : undefined,
          },
        ),
      );
    }
    // native, 1P/1C: the same with the publishing thread on one CPU and the consumer thread on another.
    // (4P/4C puts four consumer threads on two cores: pinned, they queue behind each other instead.)
    if (c.transport === 'native' && !explicit.has('batchSize') && availableParallelism() >= 2 && pc.some(([p, k]) => p === 1 && k === 1)) {
      const label = '1 partition / 1 consumer, threads pinned (publisher and consumer on different CPUs)';
      rows.push(variant(c, '1p1c-pinned', label, 'burst', { partitions: 1, consumers: 1 }, { pin: true }, { seed: SEED_1P1C, baseline: floors ? '1p1c-pinned-floor' : undefined }));
      if (floors) rows.push(floorRow(c, '1p1c-pinned-floor', label, { partitions: 1, consumers: 1 }, { pin: true }, SEED_1P1C));
    }
    return rows;
  },
  runners: {
    floor: (ctx) => latencyFloorRun(ctx, 0, 'burst'),
    burst: (ctx) =>
      latencyRun(ctx, {
        payload: 'trade',
        open: false,
        // The bus buffers at most 16K events, like the seed's 16K ring (native: pass --transport-option for its own ring size).
        batching: { maxPendingEvents: 16_384 },
        pin: ctx.variant.params['pin'] === true,
      }),
  },
};
