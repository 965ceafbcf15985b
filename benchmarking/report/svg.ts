/**
 * Inline SVG charts (no external scripts or CDNs): throughput bars per configuration and latency
 * percentile curves.
 */
import type { ScenarioResult } from '../lib/types.js';
import { fmtCompact } from './rows.js';

const COLORS = ['#2563eb', '#dc2626', '#16a34a', '#9333ea', '#ea580c', '#0891b2', '#ca8a04', '#db2777'];

/** Room for `text` in the 12 px label font, generously (system-ui averages ~6.2 px per character). */
function labelWidth(text: string): number {
  return Math.ceil(text.length * 6.8);
}

export function esc(s: string): string {
  return s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;');
}

/** Horizontal bars: mean throughput (min..max whisker) per variant, with the seed/target figure beside it. */
export function throughputChart(r: ScenarioResult): string {
  const rows = r.variants.filter((v) => !v.error && v.iterations.length);
  if (!rows.length) return '';
  // Wide enough for the longest label: a fixed width would cut long ones on the left.
  const labelW = Math.max(330, 16 + Math.max(...rows.map((v) => labelWidth(v.label))));
  const barW = 420;
  const rowH = 34;
  const max = Math.max(...rows.map((v) => Math.max(v.summary.throughput.max, v.seed?.throughput ?? 0))) || 1;
  const x = (n: number) => labelW + (n / max) * barW;
  const h = rows.length * rowH + 30;
  const parts: string[] = [];
  rows.forEach((v, i) => {
    const y = 10 + i * rowH;
    const t = v.summary.throughput;
    const color = v.kind === 'baseline' ? '#6b7280' : '#2563eb';
    parts.push(`<text x="${labelW - 8}" y="${y + 14}" text-anchor="end" class="label">${esc(v.label)}</text>`);
    parts.push(
      `<rect class="bar" data-variant="${esc(v.id)}" x="${labelW}" y="${y + 2}" width="${Math.max(1, x(t.mean) - labelW).toFixed(1)}" height="16" fill="${color}"><title>${esc(v.label)}: ${Math.round(t.mean)} events/s</title></rect>`,
    );
    parts.push(`<line class="whisker" x1="${x(t.min).toFixed(1)}" x2="${x(t.max).toFixed(1)}" y1="${y + 10}" y2="${y + 10}" stroke="#111" stroke-width="1.5"/>`);
    if (v.seed?.throughput) {
      parts.push(
        `<rect class="seed-bar" x="${labelW}" y="${y + 20}" width="${Math.max(1, x(v.seed.throughput) - labelW).toFixed(1)}" height="6" fill="#f59e0b"><title>${esc(v.seed.source)}: ${v.seed.throughput} events/s</title></rect>`,
      );
    }
    parts.push(`<text x="${x(t.mean) + 6}" y="${y + 15}" class="value">${fmtCompact(t.mean)}/s</text>`);
  });
  parts.push(`<text x="${labelW}" y="${h - 4}" class="axis">0</text><text x="${labelW + barW}" y="${h - 4}" text-anchor="end" class="axis">${fmtCompact(max)}/s</text>`);
  const legend = `<text x="10" y="${h - 4}" class="axis">blue: eventlane, grey: baseline, amber: seed / target</text>`;
  return `<svg class="chart throughput-chart" data-scenario="${esc(r.scenario)}" xmlns="http://www.w3.org/2000/svg" width="${labelW + barW + 90}" height="${h}" viewBox="0 0 ${labelW + barW + 90} ${h}">${parts.join('')}${legend}</svg>`;
}

/** Latency percentile curves: x = percentile on a 1/(1-p) log scale, y = microseconds on a log scale. */
export function latencyChart(r: ScenarioResult): string {
  const rows = r.variants.filter((v) => v.summary.latency && v.summary.latency.count > 0);
  if (!rows.length) return '';
  // The legend goes under the plot, a line per configuration, as wide as its longest label: beside the
  // plot it would be cut at the right edge, and the floor rows (long labels) could not be told apart.
  const L = 60;
  const W = Math.max(760, L + 20 + Math.max(...rows.map((v) => labelWidth(v.label))));
  const plotH = 300;
  const H = plotH + 10 + rows.length * 16;
  const B = 40;
  const T = 10;
  const R = W - 760 + 20;
  const xs = (p: number) => Math.log10(1 / Math.max(1e-5, 1 - Math.min(p, 99.999) / 100)); // 0 at p0, 5 at 99.999
  const allUs = rows.flatMap((v) => v.summary.latency!.curve.map(([, us]) => us)).concat(rows.flatMap((v) => Object.values(v.seed?.latencyUs ?? {})));
  const lo = Math.max(0.1, Math.min(...allUs.filter((u) => u > 0)));
  const hi = Math.max(...allUs, lo * 10);
  const ly = (us: number) => Math.log10(Math.max(lo, us));
  const px = (p: number) => L + (xs(p) / 5) * (W - L - R);
  const py = (us: number) => T + (1 - (ly(us) - Math.log10(lo)) / (Math.log10(hi) - Math.log10(lo) || 1)) * (plotH - T - B);
  const parts: string[] = [];
  for (const p of [0, 50, 90, 99, 99.9, 99.99]) {
    parts.push(`<line x1="${px(p)}" x2="${px(p)}" y1="${T}" y2="${plotH - B}" stroke="#e5e7eb"/><text x="${px(p)}" y="${plotH - B + 16}" text-anchor="middle" class="axis">p${p}</text>`);
  }
  for (let e = Math.floor(Math.log10(lo)); e <= Math.ceil(Math.log10(hi)); e++) {
    const us = 10 ** e;
    if (us < lo || us > hi) continue;
    parts.push(
      `<line x1="${L}" x2="${W - R}" y1="${py(us)}" y2="${py(us)}" stroke="#e5e7eb"/><text x="${L - 6}" y="${py(us) + 4}" text-anchor="end" class="axis">${us >= 1000 ? `${us / 1000} ms` : `${us} us`}</text>`,
    );
  }
  rows.forEach((v, i) => {
    const color = COLORS[i % COLORS.length]!;
    const pts = v.summary.latency!.curve.filter(([p]) => p < 100).map(([p, us]) => `${px(p).toFixed(1)},${py(us).toFixed(1)}`);
    parts.push(`<polyline class="latency-curve" data-variant="${esc(v.id)}" fill="none" stroke="${color}" stroke-width="2" points="${pts.join(' ')}"/>`);
    parts.push(`<text x="${L}" y="${plotH + 14 + i * 16}" fill="${color}" class="label">${esc(v.label)}</text>`);
    const s = v.seed?.latencyUs;
    if (s) {
      for (const [k, p] of [
        ['p50', 50],
        ['p90', 90],
        ['p99', 99],
        ['p99.9', 99.9],
      ] as const) {
        const us = s[k];
        if (us !== undefined && us > 0)
          parts.push(`<circle class="seed-point" cx="${px(p).toFixed(1)}" cy="${py(us).toFixed(1)}" r="4" fill="none" stroke="${color}"><title>${esc(v.seed!.source)} ${k}: ${us} us</title></circle>`);
      }
    }
  });
  parts.push(`<text x="${L}" y="${plotH - 6}" class="axis">percentile (log scale of 1/(1-p)); circles: seed figures / targets; y: microseconds (log)</text>`);
  return `<svg class="chart latency-chart" data-scenario="${esc(r.scenario)}" xmlns="http://www.w3.org/2000/svg" width="${W}" height="${H}" viewBox="0 0 ${W} ${H}">${parts.join('')}</svg>`;
}
