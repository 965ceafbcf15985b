/**
 * A scenario's verdict in words: its headline configuration's figure and how it compares with the
 * hand-written baseline it is linked to, with each peer measured in the same run (what a team would pick
 * instead) and with the reference figure, with the direction that is better. The same headline figures make
 * the suite's summary table.
 */
import { referenceName } from '../references.js';
import type { ScenarioResult, VariantResult } from '../lib/types.js';
import { HIGHER, LOWER, fmtCompact, fmtRatio, fmtUs } from './rows.js';

export interface Headline {
  scenario: string;
  transport: string;
  label: string;
  /** The headline figure: events/s, or p50 / p99 for latency rows. */
  figure: string;
  /**
   * The ratio to the linked baseline, and the baseline's label; for latency rows of several iterations, `medians`:
   * the ratios of the medians of the iterations' own percentiles.
   */
  vsBaseline?: { ratio: string; to: string; medians?: string };
  /** The ratio to each peer row of the run that measured something, and the peer's name and version range. */
  vsPeers: { ratio: string; to: string }[];
  /** The ratio to the reference figure, and the reference's name; `ratio` says why when there is none. */
  vsReference?: { ratio: string; to: string };
  direction: typeof HIGHER | typeof LOWER;
}

/** What stands for a ratio to a reference measured in another setup (the table's notes say which). */
const NO_RATIO = 'n/a (setup differs)';

const usable = (v: VariantResult) => v.kind === 'eventlane' && !v.error && v.iterations.length > 0;

const hasRatio = (v: VariantResult) => Object.values(v.ratios).some((x) => x !== undefined) || v.seedSetupDiffers !== undefined;

/** The row a scenario is summed up by: its declared headline, else the first library row with a ratio, else the first library row. */
export function headlineRow(r: ScenarioResult): VariantResult | undefined {
  const rows = r.variants.filter(usable);
  return rows.find((v) => v.id === r.headline) ?? rows.find(hasRatio) ?? rows[0];
}

/** Latency rows are judged by their percentiles: rows that measured latency and have no throughput ratio. */
function isLatency(v: VariantResult): boolean {
  return v.summary.latency !== undefined && v.ratios.vsBaseline === undefined && v.ratios.vsSeed === undefined;
}

export function headline(r: ScenarioResult): Headline | undefined {
  const v = headlineRow(r);
  if (!v) return undefined;
  const base = v.baseline ? r.variants.find((b) => b.id === v.baseline) : undefined;
  const peers = r.variants.filter((p) => p.kind === 'peer' && !p.error && p.iterations.length > 0);
  const out: Headline = { scenario: r.scenario, transport: r.transport, label: v.label, figure: '', vsPeers: [], direction: HIGHER };
  return isLatency(v) ? latencyHeadline(out, v, base, peers) : throughputHeadline(out, v, base, peers);
}

/** A peer row's name and version range (`params.peer`, set by peerRows), else its label. */
function peerName(p: VariantResult): string {
  return typeof p.params['peer'] === 'string' ? p.params['peer'] : p.label;
}

/** `p50 <ratio> / p99 <ratio>`, `?` for a ratio not known. */
function latencyRatios(p50: number | undefined, p99: number | undefined): string {
  const ratio = (n: number | undefined) => (n !== undefined ? fmtRatio(n) : '?');
  return `p50 ${ratio(p50)} / p99 ${ratio(p99)}`;
}

/** The comparison with the reference: `ratio` of the row, or NO_RATIO when the reference's setup differs. */
function vsReference(v: VariantResult, ratio: string | undefined): Headline['vsReference'] {
  if (!v.seed) return undefined;
  const to = referenceName(v.seed.source);
  if (v.seedSetupDiffers !== undefined) return { ratio: NO_RATIO, to };
  return ratio === undefined ? undefined : { ratio, to };
}

function latencyHeadline(out: Headline, v: VariantResult, base: VariantResult | undefined, peers: VariantResult[]): Headline {
  const lat = v.summary.latency!;
  const { latencyP50VsBaseline: p50, latencyP99VsBaseline: p99, latencyP99VsSeed: p99Ref } = v.ratios;
  const { latencyP50VsBaselineMedian: m50, latencyP99VsBaselineMedian: m99 } = v.ratios;
  const medians = v.iterations.length > 1 && (m50 !== undefined || m99 !== undefined) ? latencyRatios(m50, m99) : undefined;
  return {
    ...out,
    direction: LOWER,
    figure: `p50 ${fmtUs(lat.p50Us)} / p99 ${fmtUs(lat.p99Us)} us`,
    vsBaseline: base && (p50 !== undefined || p99 !== undefined) ? { ratio: latencyRatios(p50, p99), to: base.label, ...(medians ? { medians } : {}) } : undefined,
    vsPeers: peers.filter((p) => p.summary.latency !== undefined).map((p) => ({ ratio: latencyRatios(lat.p50Us / p.summary.latency!.p50Us, lat.p99Us / p.summary.latency!.p99Us), to: peerName(p) })),
    vsReference: vsReference(v, p99Ref !== undefined ? `p99 ${fmtRatio(p99Ref)}` : undefined),
  };
}

function throughputHeadline(out: Headline, v: VariantResult, base: VariantResult | undefined, peers: VariantResult[]): Headline {
  const { vsBaseline, vsSeed } = v.ratios;
  const mean = v.summary.throughput.mean;
  return {
    ...out,
    figure: `${fmtCompact(mean)} events/s`,
    vsBaseline: base && vsBaseline !== undefined ? { ratio: fmtRatio(vsBaseline), to: base.label } : undefined,
    vsPeers: peers.filter((p) => p.summary.throughput.mean > 0).map((p) => ({ ratio: fmtRatio(mean / p.summary.throughput.mean), to: peerName(p) })),
    vsReference: vsReference(v, vsSeed !== undefined ? fmtRatio(vsSeed) : undefined),
  };
}

/** The verdict line of a scenario (without the `verdict:` prefix), or undefined when nothing was measured. */
export function verdict(r: ScenarioResult): string | undefined {
  if (r.skipped) return undefined;
  const h = headline(r);
  if (!h) return 'no configuration of the library was measured (see the warnings)';
  const comparisons = [h.vsBaseline, ...h.vsPeers, h.vsReference]
    .filter((c) => c !== undefined)
    .map((c) => (c.ratio === NO_RATIO ? `no ratio to the ${c.to} (measured in another setup)` : `${c.ratio} the ${c.to}${mediansOf(c)}`));
  const body = comparisons.length ? `${h.figure}, ${comparisons.join(', ')}` : `${h.figure} (no baseline or reference to compare with in this run)`;
  return `${h.label}: ${body}; ${h.direction}`;
}

/** ` (medians of the iterations: ...)` for a comparison that has them. */
function mediansOf(c: { to: string; medians?: string }): string {
  return c.medians ? ` (medians of the iterations: ${c.medians})` : '';
}

/** The summary table of a suite: a row per scenario, its headline figure and ratios. */
export function summaryRows(runs: ScenarioResult[]): { headers: string[]; rows: string[][] } {
  const headers = ['scenario', 'headline', 'figure', 'vs baseline', 'vs reference', 'better'];
  const rows = runs.map((r) => {
    const where = `${r.scenario} (${r.transport})`;
    if (r.skipped) return [where, '', 'skipped', '', '', ''];
    const h = headline(r);
    if (!h) return [where, '', 'failed', '', '', ''];
    const vsReference = h.vsReference?.ratio === NO_RATIO ? 'n/a (setup)' : (h.vsReference?.ratio ?? '');
    return [where, h.label, h.figure, h.vsBaseline?.ratio ?? '', vsReference, h.direction === LOWER ? 'lower' : 'higher'];
  });
  return { headers, rows };
}
