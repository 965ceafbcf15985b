/**
 * latency-sustained (seed 001): 50,000 40-byte trading events at a steady 10,000/s, open loop,
 * latency from each event's intended send time to handler start; 1P/1C and 4P/4C.
 */
import { latencyRun } from '../lib/latency-run.js';
import type { Scenario, SeedFigure } from '../lib/types.js';
import { variant } from './helpers.js';

/** Seed 001's figures for 1 producer / 1 consumer and 4 / 4. */
const SEED_1P1C: SeedFigure = { source: 'seed 001', latencyUs: { min: 0, mean: 22, p50: 15, p90: 57, p99: 69, 'p99.9': 92, max: 1461 }, note: 'dominated by a 50 us polling sleep' };
const SEED_4P4C: SeedFigure = { source: 'seed 001', latencyUs: { min: 0, mean: 25, p50: 22, p90: 62, p99: 68, 'p99.9': 83, max: 145 } };

export const latencySustained: Scenario = {
  name: 'latency-sustained',
  title: 'Sustained latency: 50,000 events at 10,000/s',
  seed: '001',
  description: 'open-loop constant rate (coordinated omission corrected); 1P/1C and 4P/4C; publish -> handler start.',
  transports: ['memory', 'native', 'redis'],
  defaults: { messageCount: 50_000, messageSize: 40, rate: 10_000, batchSize: 4000, flushInterval: 0, iterations: 3, warmup: 1 },
  quick: { messageCount: 10_000, iterations: 2, warmup: 0 },
  variants(c, explicit) {
    const pc = explicit.has('partitions') || explicit.has('consumers') ? [[c.partitions, c.consumers]] : [[1, 1], [4, 4]];
    const rows = pc.map(([p, k]) =>
      variant(c, `${p}p${k}c`, `${p} partition${p! > 1 ? 's' : ''} / ${k} consumer${k! > 1 ? 's' : ''} at ${c.rate.toLocaleString('en-US')}/s`, 'sustained', { partitions: p!, consumers: k! }, {}, {
        seed: p === 1 && k === 1 ? SEED_1P1C : p === 4 && k === 4 ? SEED_4P4C : undefined,
      }),
    );
    // native: the same 1P/1C with a consumer that spins 200 us before it sleeps (transport option spinUs;
    // default 0, so an idle consumer costs no CPU). The seed's C++ consumer polled every 50 us.
    if (c.transport === 'native' && pc.some(([p, k]) => p === 1 && k === 1)) {
      rows.push(
        variant(c, '1p1c-spin', `1 partition / 1 consumer at ${c.rate.toLocaleString('en-US')}/s, consumer spins 200 us (spinUs)`, 'sustained', { partitions: 1, consumers: 1 }, { spinUs: 200 }, {
          seed: SEED_1P1C,
        }),
      );
    }
    return rows;
  },
  runners: {
    sustained: (ctx) => {
      const spinUs = ctx.variant.params['spinUs'];
      return latencyRun(ctx, { payload: 'trade', open: true, transport: spinUs === undefined ? undefined : { spinUs } });
    },
  },
};
