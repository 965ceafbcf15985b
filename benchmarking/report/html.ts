/**
 * Self-contained HTML report: environment and notices, the summary of the headline figures, one section per
 * scenario with its table (ratio columns say which direction is better), notes, verdict and inline SVG
 * charts, the reference systems, warnings, and the full JSON report embedded for tooling. No external
 * resources. Tables scroll inside their box and charts scale down, so nothing pushes the page sideways.
 */
import type { ScenarioResult } from '../lib/types.js';
import { referenceFor, scenarioReferences, type ReferenceSystem } from '../references.js';
import { runNotices } from './notices.js';
import { nodeOptionsText, type BenchReport } from './report.js';
import { scenarioHeading, tableNotes, usedColumns, warnings } from './rows.js';
import { esc, latencyChart, throughputChart } from './svg.js';
import { summaryRows, verdict } from './verdict.js';

const CSS = `body{font:14px/1.45 system-ui,sans-serif;margin:24px auto;padding:0 16px;color:#111;max-width:1200px}
.table-wrap{overflow-x:auto;max-width:100%}table{border-collapse:collapse;margin:8px 0 16px}
td,th{border:1px solid #ddd;padding:3px 8px;text-align:right;white-space:nowrap;vertical-align:top}
td:first-child,th:first-child{text-align:left;white-space:normal;min-width:14em;max-width:32em}
th{background:#f3f4f6}th small{display:block;font-weight:400;color:#374151}
.warn{color:#b91c1c;font-weight:600}.notice{color:#92400e;font-weight:600}.verdict{background:#eff6ff;border-left:4px solid #2563eb;padding:6px 10px}
.notes{color:#374151;font-size:13px}.chart{display:block;margin:8px 0;max-width:100%;height:auto}
.chart .label,.chart .legend{font-size:12px}.chart .value,.chart .axis,.chart .reference-label{font-size:11px;fill:#374151}
.chart .reference-label{fill:#92400e}.chart .reference-legend{font-size:12px;fill:#92400e}.chart .ref-number{font-size:8px;font-weight:700;fill:#92400e}
section{margin-bottom:32px}code{background:#f3f4f6;padding:1px 4px;overflow-wrap:anywhere}`;

function htmlTable(headers: string[], rows: string[][]): string {
  const head = `<tr>${headers.map((h) => `<th>${h}</th>`).join('')}</tr>`;
  const body = rows.map((r) => `<tr>${r.map((c) => `<td>${esc(c)}</td>`).join('')}</tr>`).join('');
  return `<div class="table-wrap"><table>${head}${body}</table></div>`;
}

function scenarioSection(r: ScenarioResult): string {
  if (r.skipped) return `<section class="scenario skipped" id="${esc(r.scenario)}"><h2>${esc(r.scenario)}</h2><p>Not measured: ${esc(r.skipped)}</p></section>`;
  const { columns, rows } = usedColumns(r);
  const headers = columns.map((c) => `${esc(c.header)}${c.direction ? `<small>${esc(c.direction)}</small>` : ''}`);
  const notes = tableNotes(r);
  const v = verdict(r);
  return `<section class="scenario" id="${esc(r.scenario)}"><h2>${esc(r.scenario)}: ${esc(r.title)}</h2>
<p>${esc(scenarioHeading(r))}</p>${htmlTable(headers, rows)}
${notes.length ? `<ul class="notes">${notes.map((n) => `<li>${esc(n)}</li>`).join('')}</ul>` : ''}
${v ? `<p class="verdict"><strong>Verdict:</strong> ${esc(v)}</p>` : ''}
<h3>Throughput per configuration</h3>${throughputChart(r)}
${r.variants.some((x) => x.summary.latency) ? `<h3>Latency percentiles</h3>${latencyChart(r)}` : ''}</section>`;
}

/** The reference systems the report's figures come from. */
function referencesSection(runs: ScenarioResult[]): string {
  const systems = new Map<string, ReferenceSystem>();
  for (const r of runs) {
    for (const s of scenarioReferences(r.seed)) systems.set(s.id, s);
    for (const v of r.variants) {
      const s = v.seed ? referenceFor(v.seed.source) : undefined;
      if (s) systems.set(s.id, s);
    }
  }
  if (systems.size === 0) return '';
  const items = [...systems.values()].map((s) => `<li><strong>${esc(s.name)}</strong>: ${esc(s.what)}; ${esc(s.measuredOn)}.</li>`);
  return `<section id="references"><h2>Reference systems</h2><ul>${items.join('')}</ul></section>`;
}

export function renderHtml(report: BenchReport): string {
  const e = report.environment;
  const warn = warnings(report.runs);
  const notices = runNotices(report);
  let summary = '';
  if (report.runs.length > 1) {
    const { headers, rows } = summaryRows(report.runs);
    summary = `<section id="summary"><h2>Summary: the headline figure of each scenario</h2>${htmlTable(headers.map(esc), rows)}</section>`;
  }
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1"><title>eventlane benchmark report</title><style>${CSS}</style></head>
<body><h1>eventlane benchmark report</h1>
<p>${esc(report.generatedAt)}: ${esc(e.cpuModel)} (${e.cores} cores, ${e.memoryMb} MB), ${esc(e.os)}, Node ${esc(e.node)}${esc(nodeOptionsText(e))}${e.redisVersion ? `, Redis ${esc(e.redisVersion)}` : ''}, commit ${esc(e.gitCommit ?? '?')}, load ${e.loadAvg.join(' / ')}.</p>
<p>Command: <code>${esc(report.command)}</code></p>
${notices.length ? `<ul class="notices">${notices.map((n) => `<li class="notice">${esc(n)}</li>`).join('')}</ul>` : ''}
${warn.length ? `<ul class="warnings">${warn.map((w) => `<li class="warn">${esc(w)}</li>`).join('')}</ul>` : ''}
${summary}
${report.runs.map(scenarioSection).join('\n')}
${referencesSection(report.runs)}
<script type="application/json" id="benchmark-data">${JSON.stringify(report).replace(/</g, '\\u003c')}</script>
</body></html>
`;
}
