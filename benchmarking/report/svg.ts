/**
 * Inline SVG charts (no external scripts or CDNs): throughput bars per configuration and latency
 * percentile curves. Nothing is told apart by colour alone: baselines are hatched, reference bars carry a
 * text label, and each latency curve has its own dash pattern, marker shape and number in the legend.
 */
import type { ScenarioResult, VariantResult } from '../lib/types.js';
import { fmtCompact, rowName, sourceName } from './rows.js';

const COLORS = ['#2563eb', '#dc2626', '#16a34a', '#9333ea', '#ea580c', '#0891b2', '#ca8a04', '#db2777'];
const DASHES = ['', '6 3', '2 3', '8 3 2 3', '12 4', '4 2 1 2', '1 2', '10 2 2 2 2 2'];
const MARKERS = ['circle', 'square', 'triangle', 'diamond', 'cross', 'plus', 'star', 'bar'] as const;
const OURS = '#2563eb';
const BASELINE = '#6b7280';
const REFERENCE = '#b45309';

/** Room for `text` in the 12 px label font, generously (system-ui averages ~6.2 px per character). */
function labelWidth(text: string): number {
  return Math.ceil(text.length * 6.8);
}

export function esc(s: string): string {
  return s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;');
}

/** An id usable inside the document for the chart of scenario `name`. */
function idFor(kind: string, name: string): string {
  return `${kind}-${name.replace(/[^\w-]/g, '_')}`;
}

function hatch(id: string): string {
  return `<defs><pattern id="${id}" width="6" height="6" patternUnits="userSpaceOnUse" patternTransform="rotate(45)"><rect width="6" height="6" fill="#e5e7eb"/><line x1="0" y1="0" x2="0" y2="6" stroke="${BASELINE}" stroke-width="3"/></pattern></defs>`;
}

function barRow(v: VariantResult, y: number, labelW: number, x: (n: number) => number, hatchId: string): string[] {
  const t = v.summary.throughput;
  const ours = v.kind === 'eventlane';
  const fill = ours ? OURS : `url(#${hatchId})`;
  const stroke = ours ? '' : ` stroke="${BASELINE}"`;
  const parts = [
    `<text x="${labelW - 8}" y="${y + 14}" text-anchor="end" class="label">${esc(rowName(v))}</text>`,
    `<rect class="bar ${v.kind}" data-variant="${esc(v.id)}" x="${labelW}" y="${y + 2}" width="${Math.max(1, x(t.mean) - labelW).toFixed(1)}" height="16" fill="${fill}"${stroke}><title>${esc(v.label)}: ${Math.round(t.mean)} events/s</title></rect>`,
    `<line class="whisker" x1="${x(t.min).toFixed(1)}" x2="${x(t.max).toFixed(1)}" y1="${y + 10}" y2="${y + 10}" stroke="#111" stroke-width="1.5"/>`,
    `<text x="${x(t.mean) + 6}" y="${y + 15}" class="value">${fmtCompact(t.mean)}/s</text>`,
  ];
  if (v.seed?.throughput) {
    const name = sourceName(v);
    parts.push(
      `<rect class="reference-bar" x="${labelW}" y="${y + 21}" width="${Math.max(1, x(v.seed.throughput) - labelW).toFixed(1)}" height="5" fill="${REFERENCE}"><title>${esc(name)}: ${v.seed.throughput} events/s</title></rect>`,
      `<text x="${labelW}" y="${y + 38}" class="reference-label">reference ${fmtCompact(v.seed.throughput)}/s: ${esc(name)}</text>`,
    );
  }
  return parts;
}

/** Horizontal bars: mean throughput (min..max whisker) per variant, with its reference figure under it, labelled. */
export function throughputChart(r: ScenarioResult): string {
  const rows = r.variants.filter((v) => !v.error && v.iterations.length);
  if (!rows.length) return '';
  // Wide enough for the longest label: a fixed width would cut long ones on the left.
  const labelW = Math.max(300, 16 + Math.max(...rows.map((v) => labelWidth(rowName(v)))));
  const barW = 420;
  const max = Math.max(...rows.map((v) => Math.max(v.summary.throughput.max, v.seed?.throughput ?? 0))) || 1;
  const x = (n: number) => labelW + (n / max) * barW;
  const hatchId = idFor('hatch', r.scenario);
  const parts: string[] = [hatch(hatchId)];
  let y = 10;
  for (const v of rows) {
    parts.push(...barRow(v, y, labelW, x, hatchId));
    y += v.seed?.throughput ? 48 : 28;
  }
  parts.push(`<text x="${labelW}" y="${y + 6}" class="axis">0</text><text x="${labelW + barW}" y="${y + 6}" text-anchor="end" class="axis">${fmtCompact(max)}/s</text>`);
  const ly = y + 26;
  const entries: [swatch: string, text: string][] = [[`width="14" height="12" fill="${OURS}"`, 'eventlane']];
  const others = [...new Set(rows.filter((v) => v.kind !== 'eventlane').map((v) => v.kind))];
  if (others.length) entries.push([`width="14" height="12" fill="url(#${hatchId})" stroke="${BASELINE}"`, `${others.join(' / ')} (hatched)`]);
  if (rows.some((v) => v.seed?.throughput)) entries.push([`width="14" height="5" fill="${REFERENCE}"`, 'reference figure (thin bar, labelled)']);
  entries.push(['width="14" height="1.5" fill="#111"', 'whisker: min..max of the iterations']);
  let lx = 10;
  const legend = entries
    .map(([swatch, text]) => {
      const item = `<g class="legend-item"><rect x="${lx}" y="${ly - 8}" ${swatch}/><text x="${lx + 20}" y="${ly}" class="legend">${esc(text)}</text></g>`;
      lx += 30 + labelWidth(text);
      return item;
    })
    .join('');
  const W = Math.max(labelW + barW + 90, lx);
  const h = ly + 10;
  return `<svg class="chart throughput-chart" data-scenario="${esc(r.scenario)}" xmlns="http://www.w3.org/2000/svg" width="${W}" height="${h}" viewBox="0 0 ${W} ${h}" role="img" aria-label="throughput per configuration">${parts.join('')}${legend}</svg>`;
}

/** A marker of `shape` centred on (x, y). */
function marker(shape: (typeof MARKERS)[number], x: number, y: number, color: string, cls: string): string {
  const p = (pts: [number, number][]) => pts.map(([a, b]) => `${(x + a).toFixed(1)},${(y + b).toFixed(1)}`).join(' ');
  const attrs = `class="${cls}" fill="${color}" stroke="${color}"`;
  switch (shape) {
    case 'circle':
      return `<circle ${attrs} cx="${x.toFixed(1)}" cy="${y.toFixed(1)}" r="4"/>`;
    case 'square':
      return `<rect ${attrs} x="${(x - 4).toFixed(1)}" y="${(y - 4).toFixed(1)}" width="8" height="8"/>`;
    case 'triangle':
      return `<polygon ${attrs} points="${p([
        [0, -5],
        [5, 4],
        [-5, 4],
      ])}"/>`;
    case 'diamond':
      return `<polygon ${attrs} points="${p([
        [0, -5],
        [5, 0],
        [0, 5],
        [-5, 0],
      ])}"/>`;
    case 'cross':
      return `<path ${attrs} stroke-width="2" d="M${x - 4} ${y - 4}L${x + 4} ${y + 4}M${x - 4} ${y + 4}L${x + 4} ${y - 4}"/>`;
    case 'plus':
      return `<path ${attrs} stroke-width="2" d="M${x - 5} ${y}H${x + 5}M${x} ${y - 5}V${y + 5}"/>`;
    case 'star':
      return `<polygon ${attrs} points="${p([
        [0, -5],
        [1.5, -1.5],
        [5, -1.5],
        [2, 1],
        [3, 5],
        [0, 2.5],
        [-3, 5],
        [-2, 1],
        [-5, -1.5],
        [-1.5, -1.5],
      ])}"/>`;
    default:
      return `<rect ${attrs} x="${(x - 1.5).toFixed(1)}" y="${(y - 5).toFixed(1)}" width="3" height="10"/>`;
  }
}

const MARKED: [string, number][] = [
  ['p50', 50],
  ['p90', 90],
  ['p99', 99],
  ['p99.9', 99.9],
];

/** The percentile of the curve closest to `p` (the curve's points are the HdrHistogram's). */
function usAt(curve: [number, number][], p: number): number | undefined {
  return curve.filter(([q]) => q <= p).pop()?.[1];
}

/** The distinct latency reference figures of `rows` (rows of one layout share one), with the rows (1-based) that have it. */
function distinctReferences(rows: VariantResult[]): { v: VariantResult; of: number[] }[] {
  const refs = new Map<string, { v: VariantResult; of: number[] }>();
  rows.forEach((v, i) => {
    if (!v.seed?.latencyUs) return;
    const key = `${v.seed.source} ${JSON.stringify(v.seed.latencyUs)}`;
    const ref = refs.get(key) ?? { v, of: [] };
    ref.of.push(i + 1);
    refs.set(key, ref);
  });
  return [...refs.values()];
}

/**
 * Each distinct reference figure once, as rings labelled R1, R2 ... at its p50, p90, p99 and p99.9, and a
 * legend line from `y` down saying whose figure it is and which configurations (by number) it is for.
 */
function referenceRings(rows: VariantResult[], px: (p: number) => number, py: (us: number) => number, L: number, y: number): string[] {
  const parts: string[] = [];
  distinctReferences(rows).forEach(({ v, of }, k) => {
    const name = `R${k + 1}`;
    for (const [pk, p] of MARKED) {
      const us = v.seed!.latencyUs![pk as 'p50'];
      if (us === undefined || us <= 0) continue;
      parts.push(
        `<g class="reference-point"><circle cx="${px(p).toFixed(1)}" cy="${py(us).toFixed(1)}" r="8" fill="#fff" stroke="${REFERENCE}" stroke-width="1.5"/><text x="${px(p).toFixed(1)}" y="${(py(us) + 3).toFixed(1)}" text-anchor="middle" class="ref-number">${name}</text><title>${esc(sourceName(v))} ${pk}: ${us} us</title></g>`,
      );
    }
    const yL = y + k * 20;
    parts.push(
      `<circle cx="${L + 18}" cy="${yL - 4}" r="8" fill="#fff" stroke="${REFERENCE}" stroke-width="1.5"/><text x="${L + 18}" y="${yL - 1}" text-anchor="middle" class="ref-number">${name}</text>`,
      `<text x="${L + 44}" y="${yL}" class="reference-legend">${name}: reference p50, p90, p99, p99.9 of the ${esc(sourceName(v))}, for ${of.length > 1 ? 'configurations' : 'configuration'} ${of.join(', ')}</text>`,
    );
  });
  return parts;
}

/** Latency percentile curves: x = percentile on a 1/(1-p) log scale, y = microseconds on a log scale. */
export function latencyChart(r: ScenarioResult): string {
  const rows = r.variants.filter((v) => v.summary.latency && v.summary.latency.count > 0);
  if (!rows.length) return '';
  // The legend goes under the plot, a line per configuration, as wide as its longest label.
  const L = 60;
  const W = Math.max(760, L + 120 + Math.max(...rows.map((v) => labelWidth(v.label))));
  const plotH = 300;
  const H = plotH + 20 + (rows.length + distinctReferences(rows).length) * 20;
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
    const dash = DASHES[i % DASHES.length]!;
    // Past 8 configurations colours and dashes repeat: the marker shifts, so no two curves look alike up to 64.
    const shape = MARKERS[(i + Math.floor(i / MARKERS.length)) % MARKERS.length]!;
    const curve = v.summary.latency!.curve.filter(([p]) => p < 100);
    const pts = curve.map(([p, us]) => `${px(p).toFixed(1)},${py(us).toFixed(1)}`);
    parts.push(`<polyline class="latency-curve" data-variant="${esc(v.id)}" fill="none" stroke="${color}" stroke-width="2"${dash ? ` stroke-dasharray="${dash}"` : ''} points="${pts.join(' ')}"/>`);
    for (const [, p] of MARKED) {
      const us = usAt(curve, p);
      if (us !== undefined && us > 0) parts.push(marker(shape, px(p), py(us), color, 'curve-marker'));
    }
    const yL = plotH + 14 + i * 20;
    parts.push(
      `<line x1="${L}" x2="${L + 36}" y1="${yL - 4}" y2="${yL - 4}" stroke="${color}" stroke-width="2"${dash ? ` stroke-dasharray="${dash}"` : ''}/>${marker(shape, L + 18, yL - 4, color, 'legend-marker')}`,
      `<text x="${L + 44}" y="${yL}" class="label">${i + 1}. ${esc(v.label)}</text>`,
    );
  });
  parts.push(`<text x="${L}" y="${plotH - 6}" class="axis">x: percentile (log scale of 1/(1-p)); y: microseconds (log)</text>`);
  parts.push(...referenceRings(rows, px, py, L, plotH + 14 + rows.length * 20));
  return `<svg class="chart latency-chart" data-scenario="${esc(r.scenario)}" xmlns="http://www.w3.org/2000/svg" width="${W}" height="${H}" viewBox="0 0 ${W} ${H}" role="img" aria-label="latency percentiles">${parts.join('')}</svg>`;
}
