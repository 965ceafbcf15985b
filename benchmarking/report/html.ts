/**
 * Self-contained HTML report: environment, one section per scenario with its table and inline SVG
 * charts, warnings, and the full JSON report embedded for tooling. No external resources.
 */
import { nodeOptionsText, type BenchReport } from './report.js';
import { HEADERS, scenarioHeading, variantRow, warnings } from './rows.js';
import { esc, latencyChart, throughputChart } from './svg.js';

const CSS = `body{font:14px/1.45 system-ui,sans-serif;margin:24px;color:#111;max-width:1200px}
table{border-collapse:collapse;margin:8px 0 16px}td,th{border:1px solid #ddd;padding:3px 8px;text-align:right}
td:first-child,th:first-child{text-align:left}th{background:#f3f4f6}.warn{color:#b91c1c;font-weight:600}
.chart{display:block;margin:8px 0}.chart .label{font-size:12px}.chart .value,.chart .axis{font-size:11px;fill:#374151}
section{margin-bottom:32px}code{background:#f3f4f6;padding:1px 4px}`;

export function renderHtml(report: BenchReport): string {
  const e = report.environment;
  const sections = report.runs.map((r) => {
    if (r.skipped) return `<section class="scenario skipped" id="${esc(r.scenario)}"><h2>${esc(r.scenario)}</h2><p>Not measured: ${esc(r.skipped)}</p></section>`;
    const head = `<tr>${HEADERS.map((h) => `<th>${esc(h)}</th>`).join('')}</tr>`;
    const body = r.variants
      .map(
        (v) =>
          `<tr>${variantRow(v)
            .map((c) => `<td>${esc(c)}</td>`)
            .join('')}</tr>`,
      )
      .join('');
    return `<section class="scenario" id="${esc(r.scenario)}"><h2>${esc(r.scenario)}: ${esc(r.title)}</h2>
<p>${esc(scenarioHeading(r))}</p><table>${head}${body}</table>
<h3>Throughput per configuration</h3>${throughputChart(r)}
${r.variants.some((v) => v.summary.latency) ? `<h3>Latency percentiles</h3>${latencyChart(r)}` : ''}</section>`;
  });
  const warn = warnings(report.runs);
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>eventlane benchmark report</title><style>${CSS}</style></head>
<body><h1>eventlane benchmark report</h1>
<p>${esc(report.generatedAt)}: ${esc(e.cpuModel)} (${e.cores} cores, ${e.memoryMb} MB), ${esc(e.os)}, Node ${esc(e.node)}${esc(nodeOptionsText(e))}${e.redisVersion ? `, Redis ${esc(e.redisVersion)}` : ''}, commit ${esc(e.gitCommit ?? '?')}, load ${e.loadAvg.join(' / ')}.</p>
<p>Command: <code>${esc(report.command)}</code></p>
${warn.length ? `<ul class="warnings">${warn.map((w) => `<li class="warn">${esc(w)}</li>`).join('')}</ul>` : ''}
${sections.join('\n')}
<script type="application/json" id="benchmark-data">${JSON.stringify(report).replace(/</g, '\\u003c')}</script>
</body></html>
`;
}
