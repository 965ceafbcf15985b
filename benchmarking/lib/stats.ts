/**
 * Summaries over measured iterations: mean, min, max, relative spread; merged latency; ratios.
 */
import { mergeHistograms } from './latency.js';
import type { BenchConfig, IterationResult, LatencySummary, Spread, Variant, VariantResult } from './types.js';

export function spread(values: number[]): Spread {
  if (values.length === 0) return { mean: 0, min: 0, max: 0, median: 0, spreadPct: 0 };
  const mean = values.reduce((a, b) => a + b, 0) / values.length;
  const min = Math.min(...values);
  const max = Math.max(...values);
  return { mean: r2(mean), min: r2(min), max: r2(max), median: r2(median(values)), spreadPct: mean === 0 ? 0 : r2(((max - min) / mean) * 100) };
}

function median(values: number[]): number {
  const s = [...values].sort((a, b) => a - b);
  const mid = s.length >> 1;
  return s.length % 2 === 1 ? s[mid]! : (s[mid - 1]! + s[mid]!) / 2;
}

function r2(n: number): number {
  return Math.round(n * 100) / 100;
}

/**
 * Latency over a variant's measured iterations. Each iteration brings its HdrHistogram (encoded, see
 * `LatencyRecorder.summary`): they are added into one, so p50 ... p99.9, the mean and the curve are those of
 * all the run's events together (`merge: 'histogram'`). Iterations without a histogram (results of older
 * reports) fall back to the mean of their percentiles and means, min of minima and max of maxima, labelled
 * `merge: 'iteration-mean'`: that is not a percentile of the run.
 */
export function mergeLatency(list: LatencySummary[]): LatencySummary | undefined {
  if (list.length === 0) return undefined;
  if (list.every((l): l is LatencySummary & { histogram: string } => typeof l.histogram === 'string')) return mergeHistograms(list);
  const avg = (f: (l: LatencySummary) => number) => r2(list.reduce((a, l) => a + f(l), 0) / list.length);
  return {
    count: list.reduce((a, l) => a + l.count, 0),
    minUs: Math.min(...list.map((l) => l.minUs)),
    meanUs: avg((l) => l.meanUs),
    p50Us: avg((l) => l.p50Us),
    p90Us: avg((l) => l.p90Us),
    p99Us: avg((l) => l.p99Us),
    p999Us: avg((l) => l.p999Us),
    maxUs: Math.max(...list.map((l) => l.maxUs)),
    curve: list[0]!.curve.map(([p], i) => [p, avg((l) => l.curve[i]![1])] as [number, number]),
    loop: list[0]!.loop,
    merge: 'iteration-mean',
  };
}

export function summarize(variant: Variant, all: IterationResult[], error?: string): VariantResult {
  const its = all.filter((i) => !i.warmup);
  const result: VariantResult = {
    id: variant.id,
    label: variant.label,
    kind: variant.kind,
    params: variant.params,
    config: variant.config,
    seed: variant.seed,
    baseline: variant.baseline,
    iterations: its,
    warmups: all.filter((i) => i.warmup),
    summary: summarizeIterations(its),
    delivery: summarizeDelivery(its, error),
    ratios: {},
  };
  if (error) result.error = error;
  const differs = seedSetupDiffers(variant);
  if (differs !== undefined) {
    result.seedSetupDiffers = differs;
    return result;
  }
  if (variant.seed?.throughput && its.length) result.ratios.vsSeed = r2(result.summary.throughput.mean / variant.seed.throughput);
  const seedP99 = variant.seed?.latencyUs?.p99;
  if (seedP99 && result.summary.latency) result.ratios.latencyP99VsSeed = r2(result.summary.latency.p99Us / seedP99);
  return result;
}

/** Spreads of the measured iterations' figures, and their merged latency (p50/p99 spreads only when measured). */
function summarizeIterations(its: IterationResult[]): VariantResult['summary'] {
  const lat = its.map((i) => i.latency).filter((l): l is LatencySummary => l !== undefined);
  return {
    throughput: spread(its.map((i) => i.throughput)),
    durationMs: spread(its.map((i) => i.durationMs)),
    peakRssMb: spread(its.map((i) => i.peakRssMb)),
    cpuPercent: spread(its.map((i) => i.cpuPercent)),
    p50Us: lat.length ? spread(lat.map((l) => l.p50Us)) : undefined,
    p99Us: lat.length ? spread(lat.map((l) => l.p99Us)) : undefined,
    latency: mergeLatency(lat),
  };
}

/**
 * Delivery totals of the measured iterations. received, lost and duplicated are null unless every iteration
 * counted what it received; ok needs no error, at least one iteration, and nothing lost, duplicated or unmatched.
 */
function summarizeDelivery(its: IterationResult[], error: string | undefined): VariantResult['delivery'] {
  const total = (f: (i: IterationResult) => number) => its.reduce((a, i) => a + f(i), 0);
  const hasRecv = its.length > 0 && its.every((i) => i.received !== null);
  const received = hasRecv ? total((i) => i.received ?? 0) : null;
  const lost = hasRecv ? total((i) => i.lost ?? 0) : null;
  const duplicated = hasRecv ? total((i) => i.duplicated ?? 0) : null;
  const unmatched = total((i) => i.unmatched ?? 0);
  return {
    sent: total((i) => i.sent),
    received,
    lost,
    duplicated,
    ...(unmatched > 0 ? { unmatched } : {}),
    ok: error === undefined && its.length > 0 && !lost && !duplicated && !unmatched,
    verifiedBy: its.find((i) => i.verifiedBy)?.verifiedBy,
  };
}

/** The reference setup fields the variant's config differs from, as `key value (reference value)`; undefined when none. */
function seedSetupDiffers(variant: Variant): string | undefined {
  const differs = Object.entries(variant.seed?.setup ?? {})
    .filter(([k, v]) => variant.config[k as keyof BenchConfig] !== v)
    .map(([k, v]) => `${k} ${String(variant.config[k as keyof BenchConfig])} (reference ${String(v)})`);
  return differs.length > 0 ? differs.join(', ') : undefined;
}

/**
 * Fills the ratios to the baseline once every variant of a scenario is summarized: throughput, and for
 * rows that measured latency (open loop at a fixed rate, where throughput is the rate) p50 and p99, of the
 * merged figures and of the iterations' medians.
 */
export function linkBaselines(results: VariantResult[]): void {
  for (const r of results) {
    if (!r.baseline) continue;
    const b = results.find((x) => x.id === r.baseline);
    if (!b || !r.iterations.length) continue;
    const lat = r.summary.latency;
    const base = b.summary.latency;
    if (lat && base && b.iterations.length) {
      if (base.p50Us > 0) r.ratios.latencyP50VsBaseline = r2(lat.p50Us / base.p50Us);
      if (base.p99Us > 0) r.ratios.latencyP99VsBaseline = r2(lat.p99Us / base.p99Us);
      r.ratios.latencyP50VsBaselineMedian = medianRatio(r.summary.p50Us, b.summary.p50Us);
      r.ratios.latencyP99VsBaselineMedian = medianRatio(r.summary.p99Us, b.summary.p99Us);
    } else if (b.summary.throughput.mean > 0) {
      r.ratios.vsBaseline = r2(r.summary.throughput.mean / b.summary.throughput.mean);
    }
  }
}

/** ours / baseline of two spreads' medians; undefined when either has none (reports written without it). */
function medianRatio(ours: Spread | undefined, base: Spread | undefined): number | undefined {
  return ours?.median !== undefined && base?.median ? r2(ours.median / base.median) : undefined;
}
