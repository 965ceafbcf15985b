/**
 * The --html report renders in headless Chromium with its charts: throughput bars for every
 * configuration and latency percentile curves, and loads nothing from the network.
 */
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { chromium, type Page } from 'playwright-core';
import { afterAll, describe, expect, it } from 'vitest';
import { runCli } from './run-cli.js';

const CHROMIUM = '/usr/bin/chromium';
const ARGS = ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'];
const dir = mkdtempSync(join(tmpdir(), 'eventlane-bench-html-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('HTML report', () => {
  it('renders throughput bars and latency curves in headless Chromium', async () => {
    expect(existsSync(CHROMIUM), `${CHROMIUM} missing: apt-get install -y chromium`).toBe(true);
    const html = join(dir, 'report.html');
    const json = join(dir, 'report.json');
    const r = await runCli(['run', '--scenario', 'latency-burst', '--transport', 'memory', '--message-count', '2000', '--iterations', '1', '--warmup', '0', '--quiet', '--html', html, '--json', json]);
    expect(r.code, r.stderr).toBe(0);
    const report = JSON.parse(readFileSync(json, 'utf8'));
    const variants = report.runs[0].variants.length;
    expect(variants).toBe(2);

    const browser = await chromium.launch({ executablePath: CHROMIUM, args: ARGS });
    try {
      const page = await browser.newPage();
      const external: string[] = [];
      const errors: string[] = [];
      page.on('request', (req) => {
        if (!req.url().startsWith('file:')) external.push(req.url());
      });
      page.on('pageerror', (e) => errors.push(e.message));
      await page.goto(pathToFileURL(html).href);

      const bars = page.locator('svg.throughput-chart rect.bar');
      expect(await bars.count()).toBe(variants);
      for (let i = 0; i < variants; i++) {
        const box = await bars.nth(i).boundingBox();
        expect(box!.width).toBeGreaterThan(0);
        expect(box!.height).toBeGreaterThan(0);
      }
      const curves = page.locator('svg.latency-chart polyline.latency-curve');
      expect(await curves.count()).toBe(variants);
      const box = await curves.first().boundingBox();
      expect(box!.width).toBeGreaterThan(100);
      expect(box!.height).toBeGreaterThan(10);
      expect(await clippedLabels(page)).toEqual([]);
      // reference figures are drawn beside ours as labelled rings, named in the legend with their configurations
      expect(await page.locator('svg.latency-chart g.reference-point').count()).toBe(8); // 2 layouts x p50/p90/p99/p99.9
      expect(new Set(await page.locator('svg.latency-chart g.reference-point text').allTextContents())).toEqual(new Set(['R1', 'R2']));
      expect(await page.locator('svg.latency-chart text.reference-legend').allTextContents()).toEqual([
        'R1: reference p50, p90, p99, p99.9 of the C++ lock-free in-process bus, for configuration 1',
        'R2: reference p50, p90, p99, p99.9 of the C++ lock-free in-process bus, for configuration 2',
      ]);
      // curves are told apart by dash pattern and marker shape, not colour alone
      const dashes = await curves.evaluateAll((els) => els.map((e) => e.getAttribute('stroke-dasharray') ?? ''));
      expect(new Set(dashes).size).toBe(variants);
      expect(await page.locator('svg.latency-chart .legend-marker').count()).toBe(variants);
      expect(await page.locator('p.verdict').textContent()).toMatch(/^Verdict: 1 partition \/ 1 consumer: p50 .* us.*; lower is better$/);
      expect(await page.locator('th small').allTextContents()).toContain('lower is better');
      expect(await bodyOverflow(page)).toBe(0);
      // the embedded data is the same report
      const embedded = JSON.parse((await page.locator('#benchmark-data').textContent())!);
      expect(embedded.runs[0].variants[0].id).toBe(report.runs[0].variants[0].id);
      expect(await page.locator('table tr').count()).toBe(variants + 1);
      expect(external).toEqual([]);
      expect(errors).toEqual([]);
    } finally {
      await browser.close();
    }
  }, 120_000);

  it('labels the reference bars of a throughput scenario by system and keeps the page from scrolling sideways', async () => {
    const html = join(dir, 'throughput.html');
    const r = await runCli(['run', '--scenario', 'publish-overhead', '--transport', 'noop', '--message-count', '2000', '--iterations', '1', '--warmup', '0', '--quiet', '--html', html]);
    expect(r.code, r.stderr).toBe(0);
    const browser = await chromium.launch({ executablePath: CHROMIUM, args: ARGS });
    try {
      const page = await browser.newPage({ viewport: { width: 1024, height: 800 } });
      await page.goto(pathToFileURL(html).href);
      const labels = await page.locator('svg.throughput-chart text.reference-label').allTextContents();
      expect(labels).toHaveLength(3);
      for (const l of labels) expect(l).toMatch(/^reference [\d.]+M\/s: eventlane target \(issue 2\)$/);
      expect(await page.locator('svg.throughput-chart rect.reference-bar').count()).toBe(3);
      expect(await page.locator('svg.throughput-chart .legend-item').allTextContents()).toEqual(['eventlane', 'reference figure (thin bar, labelled)', 'whisker: min..max of the iterations']);
      expect(await page.locator('#references li').first().textContent()).toContain('eventlane target (issue 2)');
      expect(await page.locator('th small').allTextContents()).toEqual(['higher is better']);
      expect(await clippedLabels(page)).toEqual([]);
      expect(await bodyOverflow(page)).toBe(0);
      // What a reader sees names systems, not report files (the embedded JSON keeps its field names).
      expect(await page.locator('body').innerText()).not.toMatch(/seed|\.\.\/shared/i);
    } finally {
      await browser.close();
    }
  }, 120_000);

  it('draws long configuration names whole: the bar labels and the latency legend grow the chart instead of being cut', async () => {
    const json = join(dir, 'report.json'); // written by the test above
    const report = JSON.parse(readFileSync(json, 'utf8'));
    // As long as the native floor rows' names, which a fixed width would cut ("...the native core, 1 partiti").
    for (const v of report.runs[0].variants) v.label = `C++ threads, no JS: the native core, 1 partition / 1 consumer, one burst after 50 ms idle (machine floor), pinned ${v.id}`;
    const long = join(dir, 'long.json');
    writeFileSync(long, JSON.stringify(report));
    const html = join(dir, 'long.html');
    const r = await runCli(['report', '--from', long, '--html', html]);
    expect(r.code, r.stderr).toBe(0);
    const browser = await chromium.launch({ executablePath: CHROMIUM, args: ARGS });
    try {
      const page = await browser.newPage();
      await page.goto(pathToFileURL(html).href);
      expect(await page.locator('svg.chart text.label').count()).toBe(2 * report.runs[0].variants.length);
      expect(await clippedLabels(page)).toEqual([]);
      expect(await bodyOverflow(page)).toBe(0);
    } finally {
      await browser.close();
    }
  }, 120_000);
});

/** How far the page is wider than the window (0: no horizontal scroll bar). */
function bodyOverflow(page: Page): Promise<number> {
  return page.evaluate('document.documentElement.scrollWidth - document.documentElement.clientWidth');
}

/** Labels drawn (in part) outside their chart's box. */
function clippedLabels(page: Page): Promise<(string | null)[]> {
  // A string: this file is compiled without the DOM's types.
  return page.evaluate(`[...document.querySelectorAll('svg.chart text.label')].flatMap((t) => {
    const svg = t.ownerSVGElement.getBoundingClientRect();
    const b = t.getBoundingClientRect();
    return b.left < svg.left - 0.5 || b.right > svg.right + 0.5 ? [t.textContent] : [];
  })`);
}
