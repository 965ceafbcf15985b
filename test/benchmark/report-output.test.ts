/**
 * The terminal report a person reads: every line fits 120 columns (long configuration names get short labels
 * and a legend, the least important columns go when that is not enough), every ratio column says which
 * direction is better, each scenario ends with a verdict in words, a suite ends with a summary table, the
 * reference figures are named by what they are, and a short run or a loaded machine is flagged.
 */
import { describe, expect, it } from 'vitest';
import { GLOBAL_DEFAULTS } from '../../benchmarking/lib/config.js';
import { linkBaselines, summarize } from '../../benchmarking/lib/stats.js';
import type { BenchConfig, IterationResult, LatencySummary, ScenarioResult, SeedFigure, Variant } from '../../benchmarking/lib/types.js';
import { renderMarkdown } from '../../benchmarking/report/markdown.js';
import { runNotices } from '../../benchmarking/report/notices.js';
import { SCHEMA, type BenchReport } from '../../benchmarking/report/report.js';
import { fitTable, renderTerminal, WIDTH } from '../../benchmarking/report/terminal.js';
import { verdict } from '../../benchmarking/report/verdict.js';
import { CPP_BUS_BURST, REFERENCES, TS_REDIS_PUBLISHING } from '../../benchmarking/references.js';

function latency(p50Us: number, p99Us: number): LatencySummary {
  return { count: 1000, minUs: 1, meanUs: p50Us, p50Us, p90Us: p50Us, p99Us, p999Us: p99Us, maxUs: p99Us, curve: [], loop: 'closed' };
}

function iteration(throughput: number, durationMs: number, lat?: LatencySummary, lost = 0): IterationResult {
  return {
    warmup: false,
    pid: 1,
    events: 100_000,
    durationMs,
    throughput,
    sent: 100_000,
    received: 100_000 - lost,
    unique: 100_000 - lost,
    lost,
    duplicated: 0,
    cpuUserMs: 1,
    cpuSystemMs: 0,
    cpuPercent: 97,
    peakRssMb: 1234,
    heapAfterGcMb: 5,
    latency: lat,
  };
}

const config = (c: Partial<BenchConfig> = {}): BenchConfig => ({ ...GLOBAL_DEFAULTS, ...c });

function row(id: string, label: string, its: IterationResult[], extra: Partial<Variant> = {}) {
  const v: Variant = { id, label, kind: 'eventlane', runner: 'x', config: config(extra.config), params: {}, ...extra };
  return summarize(v, its);
}

function scenario(name: string, variants: ReturnType<typeof row>[], transport: BenchConfig['transport'] = 'redis'): ScenarioResult {
  linkBaselines(variants);
  return { scenario: name, title: `${name} title`, seed: 'ts-redis-library', transport, config: config({ transport }), variants, startedAt: '', wallMs: 1 };
}

const LONG = 'publishMany of all 100,000, batch 4000, flush 20 ms, 1 publisher, with a configuration name longer than any column';
const tsFigure: SeedFigure = { source: 'ts-redis-library', throughput: TS_REDIS_PUBLISHING['4000-1-128']!, setup: { transport: 'redis', messageCount: 100_000 } };

function report(loadAvg: number[]): BenchReport {
  const throughput = scenario('publishing-throughput', [
    row('batch', LONG, [iteration(250_000, 2000), iteration(260_000, 2100)], { baseline: 'ioredis', seed: tsFigure, config: config({ transport: 'redis', messageCount: 100_000 }) }),
    row('ioredis', 'ioredis: pipelined XADD of 4000-event arrays of 128 B entries, one publisher, awaited per pipeline', [iteration(150_000, 2000)], { kind: 'baseline' }),
    row('lossy', 'batching off, 5 publishers awaiting each publish', [iteration(9_000, 300, undefined, 12_345)], { seed: tsFigure }),
  ]);
  const burst = scenario(
    'latency-burst',
    [
      row('1p1c', '1 partition / 1 consumer', [iteration(80_000, 30, latency(13_517, 15_794)), iteration(81_000, 31, latency(13_000, 16_000))], {
        baseline: 'floor',
        seed: CPP_BUS_BURST['1p1c'],
        config: config({ messageCount: 2000 }),
      }),
      row('floor', 'C++ threads, no JS: the native core, 1 partition / 1 consumer, one burst after 50 ms idle (machine floor)', [iteration(900_000, 3, latency(1_200, 2_400))], {
        kind: 'baseline',
      }),
    ],
    'memory',
  );
  const skipped: ScenarioResult = { ...scenario('consumer-groups', []), skipped: 'redis is not reachable at redis://127.0.0.1:6379' };
  const environment = { cpuModel: 'AMD EPYC', cores: 2, memoryMb: 4096, os: 'linux', node: '20', v8: '11', loadAvg, gitCommit: 'abc1234', redisVersion: '7.0.15' };
  return { schema: SCHEMA, generatedAt: '2026-01-01T00:00:00.000Z', command: 'npm run benchmark', environment, runs: [throughput, burst, skipped] };
}

describe('terminal report', () => {
  const r = report([7.5, 6, 5]);
  const text = renderTerminal(r);
  const lines = text.split('\n');

  it(`keeps every line within ${WIDTH} columns`, () => {
    expect(lines.filter((l) => l.length > WIDTH)).toEqual([]);
    // The long name is in the legend under its table, its row has a short label.
    expect(text).toMatch(/^#1 +\d/m);
    expect(text).toContain(`#1 = ${LONG.slice(0, 40)}`);
  });

  it('wraps the header between its items, so a list of node flags stays on one line', () => {
    const cpuModel = 'Intel(R) Xeon(R) Processor @ 2.10GHz, 64 cores';
    const flagged = { ...r, environment: { ...r.environment, cpuModel, nodeOptions: ['--max-semi-space-size=32', '--stack-size=2000'] } };
    const head = renderTerminal(flagged).split('\n').slice(0, 2);
    expect(head.every((l) => l.length <= WIDTH)).toBe(true);
    expect(head[1]).toBe('    node options --max-semi-space-size=32 --stack-size=2000, Redis 7.0.15, load 7.5 6 5');
  });

  it('says under each ratio column which direction is better', () => {
    expect(text).toContain('higher is better');
    expect(text).toContain('lower is better');
  });

  it('ends each measured scenario with a verdict in words naming the baseline and the reference', () => {
    const verdicts = lines.filter((l) => l.startsWith('verdict: '));
    expect(verdicts).toHaveLength(2);
    expect(verdict(r.runs[0]!)).toBe(
      `${LONG}: 255.0K events/s, 1.70x the ioredis: pipelined XADD of 4000-event arrays of 128 B entries, one publisher, awaited per pipeline, 3.49x the TypeScript Redis Streams library; higher is better`,
    );
    expect(verdict(r.runs[1]!)).toMatch(
      /^1 partition \/ 1 consumer: p50 [\d,]+ \/ p99 [\d,]+ us, p50 [\d.]+x \/ p99 [\d.]+x the C\+\+ threads.*, no ratio to the C\+\+ lock-free in-process bus \(measured in another setup\); lower is better$/,
    );
  });

  it('ends a suite with a summary table of the headline figures', () => {
    const at = lines.findIndex((l) => l.startsWith('summary:'));
    expect(at).toBeGreaterThan(0);
    const summary = lines.slice(at).join('\n');
    expect(summary).toContain('publishing-throughput (redis)');
    expect(summary).toContain('latency-burst (memory)');
    expect(summary).toMatch(/consumer-groups \(redis\) +skipped/);
    expect(summary).toMatch(/^publishing-throughput \(redis\) {2}#1 +255.0K events\/s +1.70x +3.49x +higher$/m);
  });

  it('names the reference systems by what they are, never by report file', () => {
    expect(text).toContain(REFERENCES['ts-redis-library'].name);
    expect(text).toContain(REFERENCES['cpp-bus'].name);
    expect(text).not.toMatch(/seed|shared|\d{3}_[0-9a-f]{16}/i);
  });

  it('flags a loaded machine and a short measured window, and the lost events', () => {
    expect(runNotices(r)).toEqual([
      expect.stringContaining('loaded machine: the 1-minute load average was 7.5 on 2 cores'),
      expect.stringContaining('short run: configurations measured for under 1 s per iteration: publishing-throughput 1 of 3 (shortest 300 ms);'),
    ]);
    expect(text).toContain('!!! loaded machine');
    expect(text).toContain('!!! publishing-throughput / batching off, 5 publishers awaiting each publish: LOST 12,345 of 100,000 events');
    expect(runNotices(report([1, 1, 1]))).toEqual([expect.stringContaining('short run:')]);
  });

  it('Markdown has the same verdicts, directions and summary', () => {
    const md = renderMarkdown(r);
    expect(md).toContain('vs baseline (higher is better)');
    expect(md).toContain('p99 vs reference (lower is better)');
    expect(md.match(/\*\*Verdict:\*\*/g)).toHaveLength(2);
    expect(md).toContain('### Summary');
  });
});

describe('verdict beside peers', () => {
  const peer = (id: string, name: string, how: string, its: IterationResult[]) => row(id, `${name} (${how})`, its, { kind: 'peer', params: { peer: name } });

  it("names each peer measured in the run with the headline row's ratio to it, and leaves out a failed one", () => {
    const r = scenario('publishing-throughput', [
      row('batch', 'batch 4000, 1 publisher', [iteration(300_000, 1000)], { baseline: 'ioredis' }),
      row('ioredis', 'ioredis: pipelined XADD', [iteration(150_000, 1000)], { kind: 'baseline' }),
      peer('peer-bullmq', 'BullMQ 5.x', 'addBulk of 1,000 jobs, 64 in flight', [iteration(60_000, 1000)]),
      peer('peer-moleculer-channels', '@moleculer/channels 0.1.x', 'Redis adapter, sendToChannel per event', [iteration(100_000, 1000)]),
      { ...peer('peer-broken', 'Broken 1.x', 'never ran', [iteration(1, 1000)]), error: 'connection refused' },
    ]);
    expect(verdict(r)).toBe('batch 4000, 1 publisher: 300.0K events/s, 2.00x the ioredis: pipelined XADD, 5.00x the BullMQ 5.x, 3.00x the @moleculer/channels 0.1.x; higher is better');
  });

  it('compares latency rows with a peer by p50 and by p99', () => {
    const r = scenario('end-to-end', [
      row('steady', '1 consumer, 10,000/s', [iteration(10_000, 5000, latency(60, 1000))]),
      peer('peer-bullmq', 'BullMQ 5.x', 'add per event', [iteration(10_000, 5000, latency(300, 4000))]),
    ]);
    expect(verdict(r)).toBe('1 consumer, 10,000/s: p50 60 / p99 1,000 us, p50 0.20x / p99 0.25x the BullMQ 5.x; lower is better');
  });
});

describe('fitTable', () => {
  it('leaves out the lowest-ranked columns when short labels are not enough, and says which', () => {
    const headers = ['name', 'a', 'b', 'c'];
    const rows = [['x'.repeat(10), 'a'.repeat(50), 'b'.repeat(50), 'c'.repeat(50)]];
    const out = fitTable({ headers, rows, ranks: [99, 90, 10, 80] });
    expect(out.every((l) => l.length <= WIDTH)).toBe(true);
    expect(out[0]!.split(/ +/)).toEqual(['name', 'a', 'c']);
    expect(out.join('\n')).not.toContain('b'.repeat(50));
    expect(out.join('\n')).toContain('(left out for width: b;');
  });

  it('keeps a table that fits as it is', () => {
    expect(fitTable({ headers: ['name', 'n'], rows: [['a', '1']] })).toEqual(['name  n', '----  -', 'a     1']);
  });
});
