/**
 * Markdown report. When the target file already holds `<!-- benchmark-results:start -->` and
 * `<!-- benchmark-results:end -->` markers, only the text between them is replaced (so the results
 * table in docs/benchmarks.md is regenerated in place).
 */
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { nodeOptionsText, type BenchReport } from './report.js';
import { HEADERS, scenarioHeading, variantRow, warnings } from './rows.js';

const START = '<!-- benchmark-results:start -->';
const END = '<!-- benchmark-results:end -->';

function mdTable(headers: string[], rows: string[][]): string {
  const esc = (s: string) => s.replace(/\|/g, '\\|');
  return [
    `| ${headers.map(esc).join(' | ')} |`,
    `| ${headers.map((_, i) => (i === 0 ? '---' : '---:')).join(' | ')} |`,
    ...rows.map((r) => `| ${r.map(esc).join(' | ')} |`),
  ].join('\n');
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
    out.push(mdTable(HEADERS, r.variants.map(variantRow)));
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
  if (existsSync(file)) {
    const text = readFileSync(file, 'utf8');
    // Markers count only on a line of their own (prose may quote them, e.g. this document's Outputs section).
    const a = lineIndex(text, START);
    const b = a >= 0 ? lineIndex(text, END, a) : -1;
    if (a >= 0 && b > a) {
      writeFileSync(file, `${text.slice(0, a + START.length)}\n\n${body}\n${text.slice(b)}`);
      return;
    }
  }
  writeFileSync(file, `# eventlane benchmark results\n\n${body}`);
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
