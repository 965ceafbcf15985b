/**
 * Ratios to a baseline in the same run: throughput rows get ours / baseline; latency rows (open loop at
 * a fixed rate, where throughput is only the rate) get p50 and p99 over the baseline's.
 */
import { describe, expect, it } from 'vitest';
import { GLOBAL_DEFAULTS } from '../../benchmarking/lib/config.js';
import { linkBaselines, summarize } from '../../benchmarking/lib/stats.js';
import { variantRow } from '../../benchmarking/report/rows.js';
import { verdict } from '../../benchmarking/report/verdict.js';
import type { IterationResult, LatencySummary, Variant } from '../../benchmarking/lib/types.js';

const variant = (id: string, baseline?: string): Variant => ({ id, label: id, kind: baseline ? 'eventlane' : 'baseline', runner: 'x', config: GLOBAL_DEFAULTS, params: {}, baseline });

function latency(p50Us: number, p99Us: number): LatencySummary {
  return { count: 100, minUs: 1, meanUs: p50Us, p50Us, p90Us: p50Us, p99Us, p999Us: p99Us, maxUs: p99Us, curve: [], loop: 'open' };
}

function iteration(throughput: number, lat?: LatencySummary): IterationResult {
  return {
    warmup: false,
    pid: 1,
    events: 100,
    durationMs: 10,
    throughput,
    sent: 100,
    received: 100,
    unique: 100,
    lost: 0,
    duplicated: 0,
    cpuUserMs: 1,
    cpuSystemMs: 0,
    cpuPercent: 10,
    peakRssMb: 50,
    heapAfterGcMb: 5,
    latency: lat,
  };
}

describe('ratios to the baseline', () => {
  it('throughput rows: ours / baseline', () => {
    const ours = summarize(variant('ours', 'base'), [iteration(300)]);
    const base = summarize(variant('base'), [iteration(200)]);
    linkBaselines([ours, base]);
    expect(ours.ratios.vsBaseline).toBe(1.5);
    expect(ours.ratios.latencyP99VsBaseline).toBeUndefined();
    expect(variantRow(ours)).toContain('1.50x');
  });

  it('latency rows: p50 and p99 over the baseline, not the rate', () => {
    const ours = summarize(variant('ours', 'base'), [iteration(10_000, latency(30, 900))]);
    const base = summarize(variant('base'), [iteration(10_000, latency(20, 300))]);
    linkBaselines([ours, base]);
    expect(ours.ratios).toMatchObject({ latencyP50VsBaseline: 1.5, latencyP99VsBaseline: 3 });
    expect(ours.ratios.vsBaseline).toBeUndefined();
    expect(variantRow(ours)).toContain('1.50x / 3.00x');
  });

  it('latency rows: the medians of the iterations, which one slow iteration does not move', () => {
    const ours = summarize(variant('ours', 'base'), [iteration(10_000, latency(30, 900)), iteration(10_000, latency(40, 5_000)), iteration(10_000, latency(30, 1_000))]);
    const base = summarize(variant('base'), [iteration(10_000, latency(20, 800)), iteration(10_000, latency(20, 800)), iteration(10_000, latency(25, 900))]);
    linkBaselines([ours, base]);
    expect(ours.summary.p99Us?.median).toBe(1_000);
    expect(ours.ratios).toMatchObject({ latencyP50VsBaselineMedian: 1.5, latencyP99VsBaselineMedian: 1.25 });
    const line = verdict({ scenario: 's', title: 's', seed: 's', transport: 'redis', config: GLOBAL_DEFAULTS, variants: [ours, base], startedAt: '', wallMs: 0 });
    expect(line).toContain('the base (medians of the iterations: p50 1.50x / p99 1.25x)');
  });

  it('a failed baseline gives no ratio', () => {
    const ours = summarize(variant('ours', 'base'), [iteration(10_000, latency(30, 900))]);
    const base = summarize(variant('base'), [], 'iteration timed out');
    linkBaselines([ours, base]);
    expect(ours.ratios).toEqual({});
  });
});
