/**
 * latency-sustained (seed 001): 50,000 40-byte trading events at a steady 10,000/s, open loop,
 * latency from each event's intended send time to handler start; 1P/1C and 4P/4C.
 *
 * On native each layout has three rows: the addon (`implementation: 'native'`), the pure-JS fallback
 * (`implementation: 'js'`, a baseline row) and the machine floor (a baseline row: the native core driven by
 * C++ threads only, no JS, `floor-run.ts`). Both the addon and the JS rows link to the floor of their
 * layout, so each reads as "x times what this machine does with no JS at all" in the same run: the floor
 * shows how far the machine itself is from the seed's figures (this VM's wake-ups and preemptions by other
 * threads), and the two ratios side by side compare the addon with the fallback. Without a floor (layouts
 * where partitions and consumers differ, `--rate 0`, or the benchmark addon not loaded) the addon row links
 * to the JS row.
 */
import { floorRowsAvailable, latencyFloorRun } from '../lib/floor-run.js';
import { spinningNativeType } from '../lib/bus.js';
import { latencyRun } from '../lib/latency-run.js';
import type { BenchConfig, ConfigKey, Scenario, SeedFigure, Variant } from '../lib/types.js';
import { variant } from './helpers.js';
import { CPP_BUS_SUSTAINED } from '../references.js';

/** Seed 001's figures for 1 producer / 1 consumer and 4 / 4. */
const SEED_1P1C: SeedFigure = CPP_BUS_SUSTAINED['1p1c'];
const SEED_4P4C: SeedFigure = CPP_BUS_SUSTAINED['4p4c'];

type Layout = { partitions: number; consumers: number };

/** Native: a layout's addon, JS-fallback and machine-floor rows (the floor only where it can run and the benchmark addon loads). */
function nativeRows(c: BenchConfig, id: string, label: string, layout: Layout, params: Variant['params'], seed: SeedFigure | undefined): Variant[] {
  const floor = layout.partitions === layout.consumers && c.rate > 0 && floorRowsAvailable() ? `${id}-floor` : undefined;
  const rows = [
    variant(c, id, `${label} (addon)`, 'sustained', layout, { ...params, implementation: 'native' }, { seed, baseline: floor ?? `${id}-js` }),
    variant(c, `${id}-js`, `${label} (JS fallback)`, 'sustained', layout, { ...params, implementation: 'js' }, { kind: 'baseline', seed, baseline: floor }),
  ];
  if (floor) rows.push(variant(c, floor, `C++ threads, no JS: the native core, ${label} (machine floor)`, 'floor', layout, params, { kind: 'baseline', seed }));
  return rows;
}

/** The layouts run, as [partitions, consumers]: the one given by --partitions/--consumers, else 1P/1C and 4P/4C. */
function layouts(c: BenchConfig, explicit: ReadonlySet<ConfigKey>): [number, number][] {
  if (explicit.has('partitions') || explicit.has('consumers')) return [[c.partitions, c.consumers]];
  return [
    [1, 1],
    [4, 4],
  ];
}

/** `N partition(s) / M consumer(s)`, the start of a layout's row label. */
function layoutName(p: number, k: number): string {
  return `${p} partition${p > 1 ? 's' : ''} / ${k} consumer${k > 1 ? 's' : ''}`;
}

/** Seed 001's figure for the layouts it measured (1P/1C, 4P/4C); undefined for the others. */
function seedFor(p: number, k: number): SeedFigure | undefined {
  if (p === 1 && k === 1) return SEED_1P1C;
  return p === 4 && k === 4 ? SEED_4P4C : undefined;
}

export const latencySustained: Scenario = {
  name: 'latency-sustained',
  title: (c) => `Sustained latency: ${c.messageCount.toLocaleString('en-US')} events ${c.rate > 0 ? `at ${c.rate.toLocaleString('en-US')}/s` : 'closed loop'}`,
  seed: 'cpp-bus',
  description: 'open-loop constant rate (coordinated omission corrected); 1P/1C and 4P/4C; publish -> handler start. Native: addon, JS fallback and the machine floor (C++ threads, no JS).',
  transports: ['memory', 'native', 'redis'],
  takes: ['messageCount', 'rate', 'batchSize', 'flushInterval', 'partitions', 'consumers'],
  defaults: { messageCount: 50_000, messageSize: 40, rate: 10_000, batchSize: 4000, flushInterval: 0, iterations: 3, warmup: 1 },
  quick: { messageCount: 10_000, iterations: 2, warmup: 0 },
  variants(c, explicit) {
    const pc = layouts(c, explicit);
    // `--rate 0` runs closed loop: no rate to name.
    const rate = c.rate > 0 ? `at ${c.rate.toLocaleString('en-US')}/s` : 'closed loop';
    const rows: Variant[] = [];
    for (const [p, k] of pc) {
      const label = `${layoutName(p, k)} ${rate}`;
      const seed = seedFor(p, k);
      if (c.transport === 'native') rows.push(...nativeRows(c, `${p}p${k}c`, label, { partitions: p, consumers: k }, {}, seed));
      else rows.push(variant(c, `${p}p${k}c`, label, 'sustained', { partitions: p, consumers: k }, {}, { seed }));
    }
    // native: the same 1P/1C with a consumer that spins 200 us before it sleeps (a transport the benchmark
    // builds, `spinningNativeType`; the transport's consumers sleep at once, so an idle one costs no CPU). The
    // seed's C++ consumer polled every 50 us.
    if (c.transport === 'native' && pc.some(([p, k]) => p === 1 && k === 1)) {
      rows.push(...nativeRows(c, '1p1c-spin', `1 partition / 1 consumer ${rate}, consumer spins 200 us (spinUs)`, { partitions: 1, consumers: 1 }, { spinUs: 200 }, SEED_1P1C));
    }
    return rows;
  },
  runners: {
    sustained: (ctx) => {
      const { spinUs, implementation } = ctx.variant.params;
      const transport = { ...(spinUs === undefined ? {} : { type: spinningNativeType(Number(spinUs)) }), ...(implementation === undefined ? {} : { implementation }) };
      return latencyRun(ctx, { payload: 'trade', open: true, transport });
    },
    floor: (ctx) => latencyFloorRun(ctx, Number(ctx.variant.params['spinUs'] ?? 0)),
  },
};
