/**
 * The result table of a scenario, shared by the terminal, Markdown and HTML reports: its columns (each ratio
 * column says which direction is better), the cells of a row, and the notes under the table (what the
 * reference figures are, why a ratio is missing).
 */
import { referenceFor, referenceName } from '../references.js';
import type { ScenarioResult, VariantResult } from '../lib/types.js';

export const HIGHER = 'higher is better';
export const LOWER = 'lower is better';

export interface Column {
  header: string;
  /** Which direction of the column's figures is better, for ratio columns. */
  direction?: typeof HIGHER | typeof LOWER;
  /** Columns with a lower rank are left out first when a table is too wide (the first column never). */
  rank: number;
  cell(v: VariantResult): string;
}

export function fmtInt(n: number): string {
  return Math.round(n).toLocaleString('en-US');
}

export function fmtCompact(n: number): string {
  if (n >= 1e6) return `${(n / 1e6).toFixed(2)}M`;
  if (n >= 1e4) return `${(n / 1e3).toFixed(1)}K`;
  return fmtInt(n);
}

export function fmtUs(n: number): string {
  return n >= 1000 ? fmtInt(n) : n >= 10 ? n.toFixed(0) : n.toFixed(1);
}

export function fmtRatio(n: number): string {
  return `${n.toFixed(2)}x`;
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

/**
 * The row's p50 / p99 are means of its iterations' percentiles, not percentiles of the run: a report from
 * before the iterations' histograms were merged (no `merge` field), or iterations without a histogram.
 */
function iterationMean(v: VariantResult): boolean {
  return v.summary.latency !== undefined && v.summary.latency.merge !== 'histogram' && v.iterations.length > 1;
}

function latencyCell(v: VariantResult): string {
  const lat = v.summary.latency;
  return lat ? `${fmtUs(lat.p50Us)} / ${fmtUs(lat.p99Us)}${iterationMean(v) ? ' *' : ''}` : '';
}

function referenceCell(v: VariantResult): string {
  const s = v.seed;
  if (s?.throughput) return `${fmtCompact(s.throughput)}/s`;
  if (s?.latencyUs) return `${s.latencyUs.p50 !== undefined ? fmtUs(s.latencyUs.p50) : '?'} / ${s.latencyUs.p99 !== undefined ? fmtUs(s.latencyUs.p99) : '?'}`;
  return '';
}

const NA_SETUP = 'n/a (setup)';

function vsReference(v: VariantResult, ratio: number | undefined, applies: boolean): string {
  if (!applies) return '';
  if (v.seedSetupDiffers !== undefined) return NA_SETUP;
  return ratio === undefined ? '' : fmtRatio(ratio);
}

function latencyVsBaseline(v: VariantResult): string {
  const p50 = v.ratios.latencyP50VsBaseline;
  const p99 = v.ratios.latencyP99VsBaseline;
  if (p50 === undefined && p99 === undefined) return '';
  return `${p50 !== undefined ? fmtRatio(p50) : '?'} / ${p99 !== undefined ? fmtRatio(p99) : '?'}`;
}

/** A row's name: its label, after its kind in brackets for every row that does not measure eventlane. */
export function rowName(v: VariantResult): string {
  return v.kind === 'eventlane' ? v.label : `[${v.kind}] ${v.label}`;
}

const failed = (f: (v: VariantResult) => string) => (v: VariantResult) => (v.error ? '' : f(v));

export const COLUMNS: Column[] = [
  { header: 'configuration', rank: 99, cell: rowName },
  // The reason of a failure is in the warnings under the table: in a cell it set the column's width.
  { header: 'events/s', rank: 90, cell: (v) => (v.error ? 'failed (below)' : fmtInt(v.summary.throughput.mean)) },
  { header: 'spread', rank: 40, cell: failed((v) => `${v.summary.throughput.spreadPct.toFixed(1)}%`) },
  { header: 'p50 / p99 us', rank: 85, cell: latencyCell },
  { header: 'peak RSS', rank: 30, cell: failed((v) => `${v.summary.peakRssMb.max.toFixed(0)} MB`) },
  { header: 'CPU', rank: 20, cell: failed((v) => `${v.summary.cpuPercent.mean.toFixed(0)}%`) },
  { header: 'delivery', rank: 80, cell: deliveryCell },
  { header: 'vs baseline', direction: HIGHER, rank: 75, cell: (v) => (v.ratios.vsBaseline !== undefined ? fmtRatio(v.ratios.vsBaseline) : '') },
  { header: 'p50 / p99 vs baseline', direction: LOWER, rank: 74, cell: latencyVsBaseline },
  { header: 'reference', rank: 60, cell: referenceCell },
  { header: 'vs reference', direction: HIGHER, rank: 70, cell: (v) => vsReference(v, v.ratios.vsSeed, v.seed?.throughput !== undefined) },
  { header: 'p99 vs reference', direction: LOWER, rank: 69, cell: (v) => vsReference(v, v.ratios.latencyP99VsSeed, v.seed?.throughput === undefined && v.seed?.latencyUs !== undefined) },
];

/** The columns of a scenario's table that have a value in some row (the first always): the others say nothing. */
export function usedColumns(r: ScenarioResult): { columns: Column[]; rows: string[][] } {
  const cells = r.variants.map(variantRow);
  const keep = COLUMNS.map((_, i) => i === 0 || cells.some((row) => row[i] !== ''));
  return { columns: COLUMNS.filter((_, i) => keep[i]), rows: cells.map((row) => row.filter((_, i) => keep[i])) };
}

/** The cells of a row, one per column of COLUMNS. */
export function variantRow(v: VariantResult): string[] {
  return COLUMNS.map((c) => c.cell(v));
}

/** The notes that go under a scenario's table: the reference systems of its rows, missing ratios, means. */
export function tableNotes(r: ScenarioResult): string[] {
  const out: string[] = [];
  const refs = new Map<string, string>();
  for (const v of r.variants) {
    if (!v.seed) continue;
    const sys = referenceFor(v.seed.source);
    const what = v.seed.latencyUs ? 'p50 / p99 us' : 'events/s';
    refs.set(v.seed.source + what, `${what}, ${sys ? `${sys.name}: ${sys.what}; ${sys.measuredOn}` : v.seed.source}`);
  }
  for (const text of refs.values()) out.push(`reference figures: ${text}`);
  const differs = new Map<string, string[]>();
  for (const v of r.variants) if (v.seedSetupDiffers !== undefined) differs.set(v.seedSetupDiffers, [...(differs.get(v.seedSetupDiffers) ?? []), v.label]);
  const withReference = r.variants.filter((v) => v.seed).length;
  for (const [diff, labels] of differs) {
    const which = labels.length === withReference && labels.length > 1 ? 'every configuration with a reference figure' : labels.join('; ');
    out.push(`${NA_SETUP}: this run's ${diff}; no ratio to the reference for ${which}`);
  }
  if (r.variants.some(iterationMean)) out.push("*: the mean of the iterations' percentiles (they had no histograms to merge)");
  return out;
}

export function scenarioHeading(r: ScenarioResult): string {
  const c = r.config;
  const where = r.forked === false ? "all in the CLI's own process (--no-fork: for debugging, not for figures)" : 'each in a fresh process';
  return `${r.scenario} on ${r.transport}: ${c.iterations} iteration(s) + ${c.warmup} warmup, ${where}`;
}

/** The names of the reference systems a figure comes from, for charts. */
export function sourceName(v: VariantResult): string {
  return v.seed ? referenceName(v.seed.source) : '';
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
