/**
 * Markdown report. When the target file already holds `<!-- benchmark-results:start -->` and
 * `<!-- benchmark-results:end -->` markers, only the text between them is replaced (so the results
 * table in docs/benchmarks.md is regenerated in place).
 */
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { nodeOptionsText, type BenchReport } from './report.js';
import { runNotices } from './notices.js';
import { scenarioHeading, tableNotes, usedColumns, warnings, type Column } from './rows.js';
import { summaryRows, verdict } from './verdict.js';
import { UsageError } from '../lib/config.js';

/** Ratio columns say in their header which direction is better. */
const header = (c: Column) => (c.direction ? `${c.header} (${c.direction})` : c.header);

const START = '<!-- benchmark-results:start -->';
const END = '<!-- benchmark-results:end -->';

function mdTable(headers: string[], rows: string[][]): string {
  const esc = (s: string) => s.replace(/\|/g, '\\|');
  return [`| ${headers.map(esc).join(' | ')} |`, `| ${headers.map((_, i) => (i === 0 ? '---' : '---:')).join(' | ')} |`, ...rows.map((r) => `| ${r.map(esc).join(' | ')} |`)].join('\n');
}

export function renderMarkdown(report: BenchReport): string {
  const e = report.environment;
  const out: string[] = [];
  out.push(
    `Measured ${report.generatedAt.slice(0, 16).replace('T', ' ')} UTC on ${e.cpuModel} (${e.cores} cores, ${e.memoryMb} MB), ` +
      `${e.os}, Node ${e.node}${nodeOptionsText(e)}${e.redisVersion ? `, Redis ${e.redisVersion}` : ''}, commit ${e.gitCommit ?? '?'}, ` +
      `load average at start ${e.loadAvg.join(' / ')}.`,
  );
  out.push('');
  out.push(`Command: \`${report.command}\``);
  for (const n of runNotices(report)) out.push('', `**Note:** ${n}`);
  for (const r of report.runs) {
    out.push('');
    out.push(`### ${r.scenario}`);
    out.push('');
    if (r.skipped) {
      out.push(`Not measured: ${r.skipped}`);
      continue;
    }
    out.push(`${r.title}. ${scenarioHeading(r)}.`);
    out.push('');
    const { columns, rows } = usedColumns(r);
    out.push(mdTable(columns.map(header), rows));
    const notes = tableNotes(r);
    if (notes.length) out.push('', ...notes.map((n) => `- ${n}`));
    const v = verdict(r);
    if (v) out.push('', `**Verdict:** ${v}`);
  }
  if (report.runs.length > 1) {
    const { headers, rows } = summaryRows(report.runs);
    out.push('', '### Summary', '', mdTable(headers, rows));
  }
  const warn = warnings(report.runs);
  if (warn.length) {
    out.push('');
    out.push('**Warnings:**');
    out.push('');
    for (const w of warn) out.push(`- ${w}`);
  }
  return out.join('\n') + '\n';
}

export function writeMarkdown(file: string, report: BenchReport): void {
  const body = renderMarkdown(report);
  const text = existsSync(file) ? readFileSync(file, 'utf8') : undefined;
  const section = text === undefined ? undefined : resultsSection(file, text);
  if (text !== undefined && section !== undefined) {
    writeFileSync(file, `${text.slice(0, section.start + START.length)}\n\n${body}\n${text.slice(section.end)}`);
    return;
  }
  writeFileSync(file, `# eventlane benchmark results\n\n${body}`);
}

/**
 * Checks, before a run, that `--markdown <file>` can be written as the docs say: a file with one marker and
 * not the other would be replaced whole (a README that lost its end marker, after a run of minutes).
 */
export function checkMarkdownTarget(file: string): void {
  if (existsSync(file)) resultsSection(file, readFileSync(file, 'utf8'));
}

/** The marked results section of `text` (offsets of its markers), undefined when it has no marker. */
function resultsSection(file: string, text: string): { start: number; end: number } | undefined {
  // Markers count only on a line of their own (prose may quote them, e.g. this document's Outputs section).
  const start = lineIndex(text, START);
  const end = lineIndex(text, END, start >= 0 ? start : 0);
  if (start >= 0 && end > start) return { start, end };
  if (start < 0 && lineIndex(text, END) < 0) return undefined;
  const [has, lacks] = start >= 0 ? [START, END] : [END, START];
  throw new UsageError(`--markdown ${file}: it has a ${has} line and no ${lacks} line after it; add the missing marker (only the text between them is replaced), or name another file.`);
}

/** Offset of `marker` standing alone on a line (at or after `from`), or -1. */
function lineIndex(text: string, marker: string, from = 0): number {
  for (let i = text.indexOf(marker, from); i >= 0; i = text.indexOf(marker, i + 1)) {
    const before = i === 0 || text[i - 1] === '\n';
    const end = i + marker.length;
    const after = end === text.length || text[end] === '\n' || text[end] === '\r';
    if (before && after) return i;
  }
  return -1;
}
