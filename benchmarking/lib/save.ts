/**
 * Saving every run's report by default: `<dir>/<time>-<suite or scenario>.json` and `.html`, in
 * `bench-results/` of the working directory unless `--results-dir` (or EVENTLANE_BENCH_RESULTS_DIR) names
 * another; `--no-save` opts out.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { isAbsolute, join, relative, resolve } from 'node:path';
import { renderHtml } from '../report/html.js';
import type { BenchReport } from '../report/report.js';
import { UsageError } from './config.js';

export const DEFAULT_RESULTS_DIR = 'bench-results';
export const RESULTS_DIR_ENV = 'EVENTLANE_BENCH_RESULTS_DIR';

/** Creates `dir` before a run, so that a run of minutes does not end unable to save; a UsageError when it cannot. */
export function prepareResultsDir(dir: string): void {
  try {
    mkdirSync(dir, { recursive: true });
  } catch (err) {
    throw new UsageError(`--results-dir ${dir}: ${err instanceof Error ? err.message : String(err)}; nothing was run (or pass --no-save).`);
  }
}

/** `2026-12-06T12-30-05Z`: the report's time, usable in a file name on every platform. */
export function fileTime(iso: string): string {
  return iso.replace(/\.\d+Z$/, 'Z').replace(/:/g, '-');
}

/** Writes the report's JSON and HTML into `dir` and returns their paths, relative to the working directory. */
export function saveReport(report: BenchReport, dir: string, name: string): string[] {
  mkdirSync(dir, { recursive: true });
  const base = join(dir, `${fileTime(report.generatedAt)}-${name.replace(/[^\w.-]+/g, '_')}`);
  writeFileSync(`${base}.json`, JSON.stringify(report, null, 2) + '\n');
  writeFileSync(`${base}.html`, renderHtml(report));
  // Relative to the working directory when inside it (bench-results/...), else absolute.
  return [`${base}.json`, `${base}.html`].map((p) => {
    const rel = relative(process.cwd(), resolve(p));
    return rel.startsWith('..') || isAbsolute(rel) ? resolve(p) : rel;
  });
}
