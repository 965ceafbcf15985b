/**
 * Native transport benchmark paths with small counts: latency measured publish (main thread) -> handler
 * start in a worker thread gives a histogram over every event sent, for the addon and the JS fallback, beside
 * the machine floor (C++ threads only); native-throughput and partition-scaling deliver every event to the
 * workers for both the addon and the JS fallback.
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import type { VariantResult } from '../../benchmarking/lib/types.js';
import { runCli } from './run-cli.js';

const dir = mkdtempSync(join(tmpdir(), 'eventlane-bench-native-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** A row that ran, timed every event sent (one iteration) and got each exactly once. */
function expectEveryEventTimed(v: VariantResult, sent: number, loop: 'open' | 'closed'): void {
  expect(v.error).toBeUndefined();
  const lat = v.iterations[0]!.latency!;
  expect(lat.count).toBe(sent);
  expect(lat.p50Us).toBeGreaterThan(0);
  expect(lat.p99Us).toBeGreaterThanOrEqual(lat.p50Us);
  expect(lat.loop).toBe(loop);
  expect(v.delivery).toMatchObject({ sent, received: sent, lost: 0, duplicated: 0, ok: true });
}

describe('native benchmark paths (worker threads)', () => {
  it('latency-sustained: addon, JS-fallback and machine-floor rows, each counting every event sent, linked to the floor', async () => {
    const file = join(dir, 'latency-sustained.json');
    const r = await runCli([
      'run',
      '--scenario',
      'latency-sustained',
      '--transport',
      'native',
      '--message-count',
      '400',
      '--rate',
      '4000',
      '--iterations',
      '1',
      '--warmup',
      '0',
      '--quiet',
      '--json',
      file,
    ]);
    expect(r.code, r.stderr).toBe(0);
    const run = JSON.parse(readFileSync(file, 'utf8')).runs[0];
    // The title names the count and rate run (it said '50,000 events at 10,000/s' whatever the flags).
    expect(run.title).toBe('Sustained latency: 400 events at 4,000/s');
    // per layout (and the native-only spinning 1P/1C): the addon, the JS fallback, the C++ floor
    const layouts = ['1p1c', '4p4c', '1p1c-spin'];
    expect(run.variants.map((v: { id: string }) => v.id)).toEqual(layouts.flatMap((l) => [l, `${l}-js`, `${l}-floor`]));
    for (const v of run.variants) {
      expectEveryEventTimed(v, 400, 'open');
      const it0 = v.iterations[0];
      expect(v.params.spinUs).toBe(v.id.startsWith('1p1c-spin') ? 200 : undefined);
      const floor = `${v.id.replace(/-(js|floor)$/, '')}-floor`;
      if (v.id.endsWith('-floor')) {
        expect(v.kind).toBe('baseline');
        expect(v.label).toMatch(/^C\+\+ threads, no JS: the native core, .* \(machine floor\)$/);
        expect(v.baseline).toBeUndefined();
        expect(it0.extra).toMatchObject({ consumerThreads: v.config.consumers, warmupEvents: 400, spinUs: v.params.spinUs ?? 0 });
        expect(it0.verifiedBy).toMatch(/C\+\+ consumer thread/);
      } else {
        // the addon and the JS fallback through worker threads, both compared with the floor of their layout
        expect(v.params.implementation).toBe(v.id.endsWith('-js') ? 'js' : 'native');
        expect(v.kind).toBe(v.id.endsWith('-js') ? 'baseline' : 'eventlane');
        expect(v.baseline).toBe(floor);
        expect(v.ratios.latencyP50VsBaseline).toBeGreaterThan(0);
        expect(v.ratios.latencyP99VsBaseline).toBeGreaterThan(0);
        expect(it0.extra.workers).toBe(v.config.consumers);
        expect(it0.verifiedBy).toMatch(/each worker exactly its partition's share/);
      }
    }
  }, 120_000);

  it('latency-sustained without the addons: the addon rows fail with the reason, the floor rows are skipped in one line, the JS rows run', async () => {
    const file = join(dir, 'latency-sustained-no-addon.json');
    const args = [
      'run',
      '--scenario',
      'latency-sustained',
      '--transport',
      'native',
      '--partitions',
      '1',
      '--consumers',
      '1',
      '--message-count',
      '200',
      '--rate',
      '4000',
      '--iterations',
      '1',
      '--warmup',
      '0',
      '--quiet',
      '--json',
      file,
    ];
    const r = await runCli(args, 120_000, { EVENTLANE_NATIVE: '0' });
    expect(r.code).toBe(1);
    // Warnings wrap at 120 columns: read them unwrapped.
    expect(r.stdout.replace(/\n\s+/g, ' ')).toMatch(/FAILED: .*EVENTLANE_NATIVE=0/);
    // The floor rows need the benchmark addon (benchmarking/native): left out, said once.
    expect(r.stderr.match(/machine-floor rows skipped/g)).toEqual(['machine-floor rows skipped']);
    expect(r.stderr).toContain('benchmark: machine-floor rows skipped: the benchmark addon did not load (EVENTLANE_NATIVE=0)');
    // The table says where the reason is, and keeps its columns narrow.
    const rows = r.stdout.split('\n').filter((l) => l.includes('failed (below)'));
    expect(rows.length).toBe(2); // the addon rows of 1P/1C and of its spinning variant;
    const run = JSON.parse(readFileSync(file, 'utf8')).runs[0];
    expect(run.variants.map((v: { id: string }) => v.id)).toEqual(['1p1c', '1p1c-js', '1p1c-spin', '1p1c-spin-js']);
    for (const v of run.variants) {
      if (v.id.endsWith('-js')) {
        expect(v.delivery).toMatchObject({ sent: 200, received: 200, ok: true });
        expect(v.baseline).toBeUndefined();
      } else {
        expect(v.error).toMatch(/EVENTLANE_NATIVE=0/);
        expect(v.baseline).toBe(`${v.id}-js`);
      }
    }
  }, 120_000);

  it('latency-burst: worker-thread latency histogram counts every event sent, p50 > 0; each layout beside its machine floor', async () => {
    const file = join(dir, 'latency-burst.json');
    const r = await runCli(['run', '--scenario', 'latency-burst', '--transport', 'native', '--message-count', '400', '--iterations', '1', '--warmup', '0', '--quiet', '--json', file]);
    expect(r.code, r.stderr).toBe(0);
    const run = JSON.parse(readFileSync(file, 'utf8')).runs[0];
    expect(run.title).toBe('Burst latency: 400 events published at once into a partition');
    // each layout and its C++ floor, plus the native-only 1P/1C tuning rows: batches of 256 and pinned threads
    // (this machine has 2+ CPUs), the pinned one beside a pinned floor
    expect(run.variants.map((v: { id: string }) => v.id)).toEqual(['1p1c', '1p1c-floor', '4p4c', '4p4c-floor', '1p1c-batch256', '1p1c-pinned', '1p1c-pinned-floor']);
    const floors: Record<string, string> = { '1p1c': '1p1c-floor', '4p4c': '4p4c-floor', '1p1c-batch256': '1p1c-floor', '1p1c-pinned': '1p1c-pinned-floor' };
    for (const v of run.variants) {
      expectEveryEventTimed(v, 400, 'closed');
      const it0 = v.iterations[0];
      if (v.id.endsWith('-floor')) {
        expect(v.kind).toBe('baseline');
        expect(v.label).toMatch(/^C\+\+ threads, no JS: the native core, .*, one burst after 50 ms idle \(machine floor\)$/);
        expect(it0.extra).toMatchObject({ consumerThreads: v.config.consumers, warmupEvents: 400, quietBeforeBurstMs: 50, spinUs: 0 });
        expect(it0.verifiedBy).toMatch(/C\+\+ consumer thread/);
        // The burst's own window: the 50 ms idle before it is not in the throughput.
        expect(it0.windowMs).toBeGreaterThan(0);
        expect(it0.durationMs).toBeCloseTo(it0.windowMs, 2);
        expect(it0.throughput).toBe(Math.round(400 / (it0.windowMs / 1000)));
      } else {
        expect(v.kind).toBe('eventlane');
        expect(v.baseline).toBe(floors[v.id]);
        expect(v.ratios.latencyP99VsBaseline).toBeGreaterThan(0);
        expect(it0.extra.workers).toBe(v.config.consumers);
        // one partition per worker: the no-op handler, matched by delivery order
        expect(it0.verifiedBy).toMatch(/each worker exactly its partition's share/);
        expect(it0.windowMs).toBeUndefined();
      }
      // The pinned rows ran the publisher (sender) on the first CPU and the consumers on the others.
      if (v.id.includes('-pinned')) {
        expect(it0.extra.publisherCpu).toBeGreaterThanOrEqual(0);
        expect(it0.extra.consumerCpus).toBeGreaterThanOrEqual(1);
      } else expect(it0.extra.publisherCpu).toBeUndefined();
    }
  }, 120_000);

  it('latency-burst with more partitions than workers falls back to handlers that read payload ids', async () => {
    const file = join(dir, 'burst-4p2c.json');
    const r = await runCli([
      'run',
      '--scenario',
      'latency-burst',
      '--transport',
      'native',
      '--partitions',
      '4',
      '--consumers',
      '2',
      '--message-count',
      '400',
      '--iterations',
      '1',
      '--warmup',
      '0',
      '--quiet',
      '--json',
      file,
    ]);
    expect(r.code, r.stderr).toBe(0);
    const [v] = JSON.parse(readFileSync(file, 'utf8')).runs[0].variants;
    expect(v.id).toBe('4p2c');
    expect(v.iterations[0].verifiedBy).toMatch(/payload ids counted/);
    expect(v.iterations[0].latency.count).toBe(400);
    expect(v.delivery).toMatchObject({ sent: 400, received: 400, lost: 0, duplicated: 0, ok: true });
  }, 120_000);

  it('native-throughput: addon and JS fallback both deliver every event to the worker', async () => {
    const file = join(dir, 'nt.json');
    const r = await runCli(['run', '--scenario', 'native-throughput', '--message-count', '20000', '--iterations', '1', '--warmup', '0', '--quiet', '--json', file]);
    expect(r.code, r.stderr).toBe(0);
    const run = JSON.parse(readFileSync(file, 'utf8')).runs[0];
    expect(run.variants.map((v: { id: string }) => v.id)).toEqual(['addon', 'js-fallback']);
    for (const v of run.variants) {
      expect(v.delivery).toMatchObject({ sent: 20_000, received: 20_000, lost: 0, ok: true });
      expect(v.iterations[0].extra).toMatchObject({ pushed: 20_000, popped: 20_000, dropped: 0 });
      expect(v.seed.throughput).toBe(5_000_000);
    }
  }, 120_000);

  it('partition-scaling: the addon row of N partitions is compared with the JS-fallback row of N partitions', async () => {
    const file = join(dir, 'ps.json');
    const r = await runCli([
      'run',
      '--scenario',
      'partition-scaling',
      '--transport',
      'native',
      '--partitions',
      '2',
      '--message-count',
      '200',
      '--iterations',
      '1',
      '--warmup',
      '0',
      '--quiet',
      '--json',
      file,
    ]);
    expect(r.code, r.stderr).toBe(0);
    const run = JSON.parse(readFileSync(file, 'utf8')).runs[0];
    expect(run.variants.map((v: { id: string; kind: string; baseline?: string; params: { implementation: string } }) => [v.id, v.kind, v.baseline, v.params.implementation])).toEqual([
      ['2p', 'eventlane', '2p-js', 'native'],
      ['2p-js', 'baseline', undefined, 'js'],
    ]);
    for (const v of run.variants) expect(v.delivery).toMatchObject({ sent: 200, received: 200, lost: 0, duplicated: 0, ok: true });
    expect(run.variants[0].ratios.vsBaseline).toBeGreaterThan(0);
  }, 120_000);
});

describe('latency-sustained: spinning consumers', () => {
  it('spinUs is not a transport option: --transport-option spinUs is refused, and the spinning row builds its own transport', async () => {
    const { assertTransportOptions, spinningNativeType } = await import('../../benchmarking/lib/bus.js');
    const { GLOBAL_DEFAULTS } = await import('../../benchmarking/lib/config.js');
    expect(() => assertTransportOptions({ ...GLOBAL_DEFAULTS, transport: 'native', transportOptions: { spinUs: 2000 } })).toThrow(/spinUs: not an option of the transport/);
    const { latencySustained } = await import('../../benchmarking/scenarios/latency-sustained.js');
    const labels = latencySustained.variants({ ...GLOBAL_DEFAULTS, ...latencySustained.defaults, transport: 'native', transportOptions: {} }, new Set()).map((v) => v.label);
    expect(labels.filter((l) => l.includes('spins 200 us')).length).toBeGreaterThan(0);
    const type = spinningNativeType(200);
    expect(spinningNativeType(200)).toBe(type); // registered once
    const { createEventBus, defineEvents } = await import('../../src/index.js');
    const { z } = await import('zod');
    const bus = await createEventBus({ service: 's', events: defineEvents({ t: z.object({ n: z.number() }) }), transport: { type, implementation: 'js' } });
    try {
      expect(bus.transport.type).toBe('native');
    } finally {
      await bus.close();
    }
  });
});
