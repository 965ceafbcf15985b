/**
 * Why a run's figures may not be worth much: a measured window too short to average out the machine's noise,
 * or a machine already loaded when the run started. Shown in the report's header and saved with it.
 */
import type { BenchReport } from './report.js';

/** Measured windows shorter than this (per iteration) give figures dominated by start-up and noise. */
export const MIN_WINDOW_MS = 1000;

export function runNotices(report: Pick<BenchReport, 'environment' | 'runs'>): string[] {
  const out: string[] = [];
  const e = report.environment;
  const load = e.loadAvg[0] ?? 0;
  if (load > e.cores) {
    out.push(`loaded machine: the 1-minute load average was ${load} on ${e.cores} cores at the start; figures are noisy and low, compare ratios within this run only`);
  }
  const short: string[] = [];
  for (const r of report.runs) {
    if (r.skipped) continue;
    // Latency rows are judged by their percentiles, whatever their window; a burst is short by design.
    const rows = r.variants.filter((v) => !v.error && !v.summary.latency && v.iterations.length > 0 && v.summary.durationMs.mean < MIN_WINDOW_MS);
    if (rows.length === 0) continue;
    const shortest = Math.min(...rows.map((v) => v.summary.durationMs.mean));
    short.push(`${r.scenario} ${rows.length} of ${r.variants.length} (shortest ${Math.round(shortest)} ms)`);
  }
  if (short.length > 0) {
    out.push(`short run: configurations measured for under ${MIN_WINDOW_MS / 1000} s per iteration: ${short.join(', ')}; use more events or a longer --duration for figures to rely on`);
  }
  return out;
}
