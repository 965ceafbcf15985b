/**
 * Duplicated deliveries are a delivery failure, like lost ones: the variant's `delivery.ok` is false and
 * the CLI exits non-zero (docs/benchmarks.md, Method: "Lost or duplicated events and failed runs are
 * printed as `!!!` warnings and make the CLI exit non-zero").
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { GLOBAL_DEFAULTS } from '../../benchmarking/lib/config.js';
import { summarize } from '../../benchmarking/lib/stats.js';
import type { IterationResult, Variant } from '../../benchmarking/lib/types.js';
import { runCli } from './run-cli.js';

const dir = mkdtempSync(join(tmpdir(), 'eventlane-bench-verdict-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const variant: Variant = { id: 'v', label: 'v', kind: 'eventlane', runner: 'x', config: GLOBAL_DEFAULTS, params: {} };

function iteration(sent: number, received: number, unique: number): IterationResult {
  return {
    warmup: false,
    pid: 1,
    events: unique,
    durationMs: 10,
    throughput: unique * 100,
    sent,
    received,
    unique,
    lost: sent - unique,
    duplicated: received - unique,
    cpuUserMs: 1,
    cpuSystemMs: 0,
    cpuPercent: 10,
    peakRssMb: 50,
    heapAfterGcMb: 5,
  };
}

describe('delivery verdict', () => {
  it('duplicates make delivery.ok false', () => {
    const ok = summarize(variant, [iteration(100, 100, 100)]);
    expect(ok.delivery).toMatchObject({ lost: 0, duplicated: 0, ok: true });
    const dup = summarize(variant, [iteration(100, 103, 100)]);
    expect(dup.delivery).toMatchObject({ lost: 0, duplicated: 3, ok: false });
  });

  it('a report with duplicated deliveries exits non-zero', async () => {
    const v = summarize(variant, [iteration(100, 103, 100)]);
    const report = {
      schema: 'eventlane-benchmark/1',
      generatedAt: new Date().toISOString(),
      command: 'test',
      environment: { cpuModel: 'x', cores: 1, memoryMb: 1, os: 'x', node: '20', v8: 'x', loadAvg: [0, 0, 0], gitCommit: null, redisVersion: null },
      runs: [{ scenario: 's', title: 't', seed: '0', transport: 'memory', config: GLOBAL_DEFAULTS, variants: [v], startedAt: new Date().toISOString(), wallMs: 1 }],
    };
    const file = join(dir, 'dup.json');
    writeFileSync(file, JSON.stringify(report));
    const r = await runCli(['report', '--from', file]);
    expect(r.stdout).toContain('3 duplicate deliveries');
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(/!!! 1 problem/);
  });
});
