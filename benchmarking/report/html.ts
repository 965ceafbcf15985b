import type { BenchReport } from './report.js';
export function renderHtml(report: BenchReport): string {
  return `<!doctype html><title>eventlane benchmark</title><pre>${JSON.stringify(report).replace(/</g, '&lt;')}</pre>`;
}
