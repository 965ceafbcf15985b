/**
 * The latency summary of a configuration is over all its measured iterations' events: the iterations'
 * HdrHistograms (each encoded into its iteration result by the child process) are added into one. The mean
 * of per-iteration percentiles is not a percentile of the run (two iterations of 10 us and 1,000 us would give
 * a "p50" of 505 us, which no event had). Without histograms (older reports) it falls back to that mean, and
 * says so. Ratios to the baseline use the merged figures.
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { GLOBAL_DEFAULTS } from '../../benchmarking/lib/config.js';
import { LatencyRecorder } from '../../benchmarking/lib/latency.js';
import { linkBaselines, summarize } from '../../benchmarking/lib/stats.js';
import type { IterationResult, LatencySummary, Variant, VariantResult } from '../../benchmarking/lib/types.js';
import { variantRow } from '../../benchmarking/report/rows.js';
import { runCli } from './run-cli.js';

const dir = mkdtempSync(join(tmpdir(), 'eventlane-bench-latency-merge-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** An iteration's latency summary, as a child process returns it: `count` events of `us` each. */
function latencyOf(count: number, us: number): LatencySummary {
  const r = new LatencyRecorder();
  for (let i = 0; i < count; i++) r.recordNs(us * 1000);
  return r.summary('closed');
}

function iteration(latency: LatencySummary): IterationResult {
  const n = latency.count;
  return {
    warmup: false,
    pid: 1,
    events: n,
    durationMs: 10,
    throughput: n * 100,
    sent: n,
    received: n,
    unique: n,
    lost: 0,
    duplicated: 0,
    cpuUserMs: 1,
    cpuSystemMs: 0,
    cpuPercent: 10,
    peakRssMb: 50,
    heapAfterGcMb: 5,
    latency,
  };
}

const variant = (id: string, baseline?: string): Variant => ({ id, label: id, kind: baseline ? 'eventlane' : 'baseline', runner: 'x', config: GLOBAL_DEFAULTS, params: {}, baseline });

/** Within HdrHistogram's 3 significant digits. */
const near = (got: number, want: number) => expect(Math.abs(got - want) / want).toBeLessThanOrEqual(0.001);

describe('latency summary over iterations', () => {
  it("merges the iterations' histograms: percentiles of all the events, not means of percentiles", () => {
    const v = summarize(variant('ours'), [iteration(latencyOf(100, 10)), iteration(latencyOf(100, 1000))]);
    const lat = v.summary.latency!;
    expect(lat.merge).toBe('histogram');
    expect(lat.count).toBe(200);
    near(lat.p50Us, 10); // the 100th of 200 events: 10 us (the mean of the p50s would be 505)
    near(lat.p99Us, 1000);
    near(lat.p999Us, 1000);
    near(lat.meanUs, 505);
    near(lat.minUs, 10);
    near(lat.maxUs, 1000);
    expect(lat.curve.find(([p]) => p === 50)![1]).toBe(lat.p50Us);
    expect(lat.histogram).toBeUndefined(); // the iterations keep theirs; the summary has no copy
    // The per-iteration spread figures are unchanged.
    expect(v.summary.p50Us).toMatchObject({ min: 10, max: 1000, mean: 505 });
    expect(v.iterations[0]!.latency!.histogram).toEqual(expect.any(String));
    expect(variantRow(v)[3]).toBe('10 / 1,000');
  });

  it("without histograms (an older report): the mean of the iterations' percentiles, labelled", () => {
    const strip = (l: LatencySummary): LatencySummary => ({ ...l, histogram: undefined });
    const v = summarize(variant('ours'), [iteration(strip(latencyOf(100, 10))), iteration(strip(latencyOf(100, 1000)))]);
    expect(v.summary.latency).toMatchObject({ merge: 'iteration-mean', count: 200 });
    near(v.summary.latency!.p50Us, 505);
    expect(variantRow(v)[3]).toBe('505 / 505 *');
    // A report written before merging (no `merge` field) is labelled the same when re-rendered.
    const old: VariantResult = { ...v, summary: { ...v.summary, latency: { ...v.summary.latency!, merge: undefined } } };
    expect(variantRow(old)[3]).toContain(' *');
  });

  it('ratios to the baseline are of the merged figures', () => {
    const ours = summarize(variant('ours', 'base'), [iteration(latencyOf(100, 10)), iteration(latencyOf(100, 1000))]);
    const base = summarize(variant('base'), [iteration(latencyOf(100, 10)), iteration(latencyOf(100, 10))]);
    linkBaselines([ours, base]);
    expect(ours.ratios.latencyP50VsBaseline).toBe(1); // 10 / 10 (means of percentiles: 50.5)
    expect(ours.ratios.latencyP99VsBaseline).toBe(100); // 1,000 / 10 (means of percentiles: 50.5)
  });

  it('the CLI: each iteration brings its histogram from its child process, and the summary counts every event', async () => {
    const file = join(dir, 'burst.json');
    const r = await runCli([
      'run',
      '-s',
      'latency-burst',
      '-t',
      'memory',
      '--partitions',
      '1',
      '--consumers',
      '1',
      '--message-count',
      '300',
      '--iterations',
      '2',
      '--warmup',
      '0',
      '--quiet',
      '--json',
      file,
    ]);
    expect(r.code, r.stderr).toBe(0);
    const v = JSON.parse(readFileSync(file, 'utf8')).runs[0].variants[0] as VariantResult;
    expect(v.iterations).toHaveLength(2);
    expect(new Set(v.iterations.map((i) => i.pid)).size).toBe(2);
    const its = v.iterations.map((i) => i.latency!);
    for (const l of its) expect(l.histogram).toMatch(/^[A-Za-z0-9+/=]+$/);
    const lat = v.summary.latency!;
    expect(lat.merge).toBe('histogram');
    expect(lat.count).toBe(600);
    expect(lat.maxUs).toBe(Math.max(...its.map((l) => l.maxUs)));
    expect(lat.minUs).toBe(Math.min(...its.map((l) => l.minUs)));
    expect(lat.p50Us).toBeGreaterThanOrEqual(Math.min(...its.map((l) => l.p50Us)));
    expect(lat.p50Us).toBeLessThanOrEqual(Math.max(...its.map((l) => l.p50Us)));
  }, 120_000);
});
