/**
 * Table rows shared by the terminal and Markdown reports.
 */
import type { ScenarioResult, VariantResult } from '../lib/types.js';

export const HEADERS = ['configuration', 'throughput (ev/s)', 'min..max', 'spread', 'p50 / p99 (us)', 'peak RSS', 'CPU', 'delivery', 'vs baseline', 'seed / target', 'vs seed'];

export function fmtInt(n: number): string {
  return Math.round(n).toLocaleString('en-US');
}

export function fmtCompact(n: number): string {
  if (n >= 1e6) return `${(n / 1e6).toFixed(2)}M`;
  if (n >= 1e4) return `${(n / 1e3).toFixed(1)}K`;
  return fmtInt(n);
}

function fmtUs(n: number): string {
  return n >= 1000 ? fmtInt(n) : n >= 10 ? n.toFixed(0) : n.toFixed(1);
}

export function deliveryCell(v: VariantResult): string {
  const d = v.delivery;
  if (v.error) return 'FAILED';
  if (d.received === null) return `${fmtInt(d.sent)} sent`;
  if (d.lost === 0 && d.duplicated === 0 && !d.unmatched) return `${fmtInt(d.sent)}/${fmtInt(d.sent)} ok`;
  const parts = [];
  if (d.lost) parts.push(`LOST ${fmtInt(d.lost)}`);
  if (d.duplicated) parts.push(`dup ${fmtInt(d.duplicated)}`);
  if (d.unmatched) parts.push(`unmatched ${fmtInt(d.unmatched)}`);
  return `${fmtInt(d.received)}/${fmtInt(d.sent)} ${parts.join(' ')}`.trim();
}

function seedCell(v: VariantResult): string {
  const s = v.seed;
  if (!s) return '';
  if (s.throughput) return `${fmtCompact(s.throughput)}/s (${s.source})`;
  if (s.latencyUs) return `p50 ${s.latencyUs.p50 ?? '?'} / p99 ${s.latencyUs.p99 ?? '?'} us (${s.source})`;
  return s.source;
}

function vsSeedCell(v: VariantResult): string {
  if (v.seedSetupDiffers !== undefined) return `n/a: ${v.seedSetupDiffers}`;
  if (v.ratios.vsSeed !== undefined) return `${v.ratios.vsSeed.toFixed(2)}x`;
  if (v.ratios.latencyP99VsSeed !== undefined) return `p99 ${v.ratios.latencyP99VsSeed.toFixed(2)}x`;
  return '';
}

/** Throughput ratio; for latency rows, p50 and p99 over the baseline's (lower is better). */
function vsBaselineCell(v: VariantResult): string {
  if (v.ratios.vsBaseline !== undefined) return `${v.ratios.vsBaseline.toFixed(2)}x`;
  const p50 = v.ratios.latencyP50VsBaseline;
  const p99 = v.ratios.latencyP99VsBaseline;
  if (p50 === undefined && p99 === undefined) return '';
  return `p50 ${p50?.toFixed(2) ?? '?'}x / p99 ${p99?.toFixed(2) ?? '?'}x`;
}

/**
 * The row's p50 / p99 are means of its iterations' percentiles, not percentiles of the run: a report from
 * before the iterations' histograms were merged (no `merge` field), or iterations without a histogram.
 */
function iterationMean(v: VariantResult): boolean {
  return v.summary.latency?.merge !== 'histogram' && v.iterations.length > 1;
}

export function variantRow(v: VariantResult): string[] {
  const t = v.summary.throughput;
  const lat = v.summary.latency;
  return [
    `${v.kind === 'eventlane' ? '' : `[${v.kind}] `}${v.label}`,
    // The reason is in the warnings under the table: in a cell it set the column's width to its length.
    v.error ? 'failed (below)' : fmtInt(t.mean),
    v.error ? '' : `${fmtCompact(t.min)}..${fmtCompact(t.max)}`,
    v.error ? '' : `${t.spreadPct.toFixed(1)}%`,
    lat ? `${fmtUs(lat.p50Us)} / ${fmtUs(lat.p99Us)}${iterationMean(v) ? ' (mean of iterations)' : ''}` : '',
    v.error ? '' : `${v.summary.peakRssMb.max.toFixed(0)} MB`,
    v.error ? '' : `${v.summary.cpuPercent.mean.toFixed(0)}%`,
    deliveryCell(v),
    vsBaselineCell(v),
    seedCell(v),
    vsSeedCell(v),
  ];
}

export function scenarioHeading(r: ScenarioResult): string {
  const c = r.config;
  const where = r.forked === false ? "all in the CLI's own process (--no-fork: for debugging, not for figures)" : 'each in a fresh process';
  return `${r.scenario} on ${r.transport} (seed ${r.seed}): ${c.iterations} iteration(s) + ${c.warmup} warmup, ${where}`;
}

/** Loud warnings: lost events, failures. */
export function warnings(runs: ScenarioResult[]): string[] {
  const out: string[] = [];
  for (const r of runs) {
    if (r.skipped) continue;
    for (const v of r.variants) {
      if (v.error) out.push(`${r.scenario} / ${v.label}: FAILED: ${v.error}`);
      else if (v.delivery.lost) out.push(`${r.scenario} / ${v.label}: LOST ${fmtInt(v.delivery.lost)} of ${fmtInt(v.delivery.sent)} events`);
      if (v.delivery.duplicated) out.push(`${r.scenario} / ${v.label}: ${fmtInt(v.delivery.duplicated)} duplicate deliveries`);
      if (v.delivery.unmatched) out.push(`${r.scenario} / ${v.label}: ${fmtInt(v.delivery.unmatched)} deliveries not matched to a publish (see the iterations' notes): delivery not verified`);
    }
  }
  return out;
}
