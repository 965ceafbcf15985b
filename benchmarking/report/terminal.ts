/**
 * Plain-text report for the terminal. Every line is at most WIDTH columns: prose is wrapped, tables
 * replace long configuration names with short labels (#1, #2 ...) explained in a legend under the table,
 * and leave out their least important columns when that is not enough (the saved reports have them all).
 */
import { nodeOptionsPart, type BenchReport } from './report.js';
import { runNotices } from './notices.js';
import { COLUMNS, scenarioHeading, tableNotes, variantRow, warnings } from './rows.js';
import { summaryRows, verdict } from './verdict.js';

export const WIDTH = 120;

const GAP = '  ';

/**
 * `units` (words, or items of a list) filled into lines of at most `width` columns, a space between two units on
 * a line; the first line starts with `lead`, the others with `indent`. A unit longer than a line stands alone on
 * its line (the caller decides what becomes of it).
 */
function fill(units: readonly string[], lead: string, width: number, indent: string): string[] {
  const lines: string[] = [];
  let line = lead;
  for (const unit of units) {
    const next = line.trim() === '' ? `${line}${unit}` : `${line} ${unit}`;
    if (next.length <= width || line.trim() === '') {
      line = next;
      continue;
    }
    lines.push(line);
    line = `${indent}${unit}`;
  }
  if (line.trim() !== '') lines.push(line);
  return lines;
}

/** `text` wrapped at spaces to lines of at most `width` columns; lines after the first start with `indent`. */
export function wrap(text: string, width = WIDTH, indent = '    '): string[] {
  // The text's own leading spaces stay on its first line.
  const lead = /^ */.exec(text)![0];
  // A single word longer than the width is cut: no line may pass it.
  return fill(text.slice(lead.length).split(' '), lead, width, indent).flatMap((l) => (l.length <= width ? [l] : chunk(l, width)));
}

/**
 * `parts` joined by ", ", wrapped between parts: a part (a CPU model, a list of node flags) stays on one line
 * unless it is longer than a line by itself, when it is wrapped at its spaces.
 */
export function wrapParts(parts: readonly string[], width = WIDTH, indent = '    '): string[] {
  const units = parts.map((p, i) => (i < parts.length - 1 ? `${p},` : p));
  return fill(units, '', width, indent).flatMap((l) => (l.length <= width ? [l] : wrap(l, width, indent)));
}

function chunk(s: string, width: number): string[] {
  const out: string[] = [];
  for (let i = 0; i < s.length; i += width) out.push(s.slice(i, i + width));
  return out;
}

export interface TableSpec {
  headers: string[];
  /** A second header line (the direction that is better), '' where none. */
  sub?: string[];
  rows: string[][];
  /** Rank of each column (COLUMNS' `rank`): the lowest go first when the table is too wide. */
  ranks?: number[];
  /** The column whose long values get short labels (#1, #2 ...) and a legend. */
  labelColumn?: number;
}

/** Lays out a table: columns empty in every row are left out (except the first); `left`: the left-aligned column besides the first. */
function layout(headers: string[], sub: string[], rows: string[][], left = 0): string[] {
  const keep = headers.map((_, i) => i === 0 || rows.some((r) => (r[i] ?? '') !== ''));
  const leftKept = keep.slice(0, left).filter(Boolean).length;
  const pick = <T>(xs: T[]) => xs.filter((_, i) => keep[i]);
  const hs = pick(headers);
  const ss = pick(sub);
  const rs = rows.map(pick);
  const w = hs.map((h, i) => Math.max(h.length, (ss[i] ?? '').length, ...rs.map((r) => (r[i] ?? '').length)));
  const line = (cells: string[]) =>
    cells
      .map((c, i) => (i === 0 || i === leftKept ? c.padEnd(w[i]!) : c.padStart(w[i]!)))
      .join(GAP)
      .trimEnd();
  const head = [line(hs)];
  if (ss.some((s) => s !== '')) head.push(line(ss));
  return [...head, w.map((n) => '-'.repeat(n)).join(GAP), ...rs.map(line)];
}

const widest = (lines: string[]) => Math.max(0, ...lines.map((l) => l.length));

/**
 * The table's lines and what goes under it (legend, columns left out), all within `width` columns: long
 * labels are shortened first, then the lowest-ranked columns are dropped one by one.
 */
export function fitTable(spec: TableSpec, width = WIDTH): string[] {
  const sub = spec.sub ?? spec.headers.map(() => '');
  let lines = layout(spec.headers, sub, spec.rows);
  if (widest(lines) <= width) return lines;
  let lc = spec.labelColumn ?? 0;
  const legend: string[] = [];
  let n = 0;
  const rows = spec.rows.map((r) => {
    if ((r[lc] ?? '') === '') return r;
    n++;
    legend.push(...wrap(`#${n} = ${r[lc]}`, width, '     '));
    return r.map((c, k) => (k === lc ? `#${n}` : c));
  });
  let headers = spec.headers;
  let subs = sub;
  let kept = rows;
  const dropped: string[] = [];
  const ranks = [...(spec.ranks ?? spec.headers.map(() => 50))];
  lines = layout(headers, subs, kept, lc);
  while (widest(lines) > width) {
    const candidates = ranks.map((rank, i) => ({ rank, i })).filter(({ i }) => i !== 0 && i !== lc);
    if (candidates.length === 0) break;
    const { i } = candidates.reduce((a, b) => (b.rank < a.rank ? b : a));
    if (kept.some((r) => (r[i] ?? '') !== '')) dropped.push(headers[i]!);
    const without = <T>(xs: T[]) => xs.filter((_, k) => k !== i);
    headers = without(headers);
    subs = without(subs);
    ranks.splice(i, 1);
    kept = kept.map(without);
    if (i < lc) lc--;
    lines = layout(headers, subs, kept, lc);
  }
  const notes = dropped.length ? wrap(`(left out for width: ${dropped.join(', ')}; the saved reports have every column)`, width) : [];
  return [...lines, ...legend, ...notes].flatMap((l) => (l.length <= width ? [l] : chunk(l, width)));
}

function scenarioLines(r: BenchReport['runs'][number]): string[] {
  if (r.skipped) return wrap(`${r.scenario}: skipped: ${r.skipped}`);
  const out = [...wrap(`${r.scenario}: ${r.title}`), ...wrap(`(${scenarioHeading(r)})`)];
  out.push(
    ...fitTable({
      headers: COLUMNS.map((c) => c.header),
      sub: COLUMNS.map((c) => c.direction ?? ''),
      rows: r.variants.map(variantRow),
      ranks: COLUMNS.map((c) => c.rank),
    }),
  );
  for (const note of tableNotes(r)) out.push(...wrap(note));
  const v = verdict(r);
  if (v) out.push(...wrap(`verdict: ${v}`));
  return out;
}

export function renderTerminal(report: BenchReport): string {
  const out: string[] = [];
  const e = report.environment;
  const parts = [`eventlane benchmark: ${e.cpuModel} x${e.cores}`, `Node ${e.node}`, nodeOptionsPart(e), e.redisVersion ? `Redis ${e.redisVersion}` : undefined, `load ${e.loadAvg.join(' ')}`];
  out.push(...wrapParts(parts.filter((p) => p !== undefined)));
  for (const n of runNotices(report)) out.push(...wrap(`!!! ${n}`));
  for (const r of report.runs) {
    out.push('');
    out.push(...scenarioLines(r));
  }
  if (report.runs.length > 1) {
    const { headers, rows } = summaryRows(report.runs);
    out.push('', 'summary: the headline figure of each scenario (the direction that is better is in the last column)');
    out.push(...fitTable({ headers, rows, labelColumn: 1, ranks: [99, 98, 90, 80, 80, 95] }));
  }
  const warn = warnings(report.runs);
  if (warn.length) {
    out.push('');
    for (const w of warn) out.push(...wrap(`!!! ${w}`));
  }
  return out.join('\n');
}
