/**
 * Plain-text tables for the terminal.
 */
import { nodeOptionsText, type BenchReport } from './report.js';
import { HEADERS, scenarioHeading, variantRow, warnings } from './rows.js';

export function table(headers: string[], rows: string[][]): string {
  const keep = headers.map((_, i) => rows.some((r) => (r[i] ?? '') !== '') || i === 0);
  const hs = headers.filter((_, i) => keep[i]);
  const rs = rows.map((r) => r.filter((_, i) => keep[i]));
  const w = hs.map((h, i) => Math.max(h.length, ...rs.map((r) => (r[i] ?? '').length)));
  const line = (cells: string[]) => cells.map((c, i) => (i === 0 ? c.padEnd(w[i]!) : c.padStart(w[i]!))).join('  ');
  return [line(hs), w.map((n) => '-'.repeat(n)).join('  '), ...rs.map(line)].join('\n');
}

export function renderTerminal(report: BenchReport): string {
  const out: string[] = [];
  const e = report.environment;
  out.push(`eventlane benchmark: ${e.cpuModel} x${e.cores}, Node ${e.node}${nodeOptionsText(e)}${e.redisVersion ? `, Redis ${e.redisVersion}` : ''}, load ${e.loadAvg.join(' ')}`);
  for (const r of report.runs) {
    out.push('');
    if (r.skipped) {
      out.push(`${r.scenario}: skipped: ${r.skipped}`);
      continue;
    }
    out.push(scenarioHeading(r));
    out.push(table(HEADERS, r.variants.map(variantRow)));
  }
  const warn = warnings(report.runs);
  if (warn.length) {
    out.push('');
    for (const w of warn) out.push(`!!! ${w}`);
  }
  return out.join('\n');
}
