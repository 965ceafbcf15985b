/**
 * Native transport benchmark paths with small counts: latency measured publish (main thread) -> handler
 * start in a worker thread gives a histogram over every event sent; native-throughput delivers every
 * event to the worker for both the addon and the JS fallback.
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { runCli } from './run-cli.js';

const dir = mkdtempSync(join(tmpdir(), 'eventlane-bench-native-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('native benchmark paths (worker threads)', () => {
  for (const scenario of ['latency-sustained', 'latency-burst']) {
    it(`${scenario}: worker-thread latency histogram counts every event sent, p50 > 0`, async () => {
      const file = join(dir, `${scenario}.json`);
      const args = ['run', '--scenario', scenario, '--transport', 'native', '--message-count', '400', '--iterations', '1', '--warmup', '0', '--quiet', '--json', file];
      if (scenario === 'latency-sustained') args.push('--rate', '4000');
      const r = await runCli(args);
      expect(r.code, r.stderr).toBe(0);
      const run = JSON.parse(readFileSync(file, 'utf8')).runs[0];
      // plus the native-only 1P/1C tuning rows: a spinning consumer (sustained), or batches of 256 and
      // pinned threads (burst; this machine has 2+ CPUs)
      expect(run.variants.map((v: { id: string }) => v.id)).toEqual(['1p1c', '4p4c', ...(scenario === 'latency-sustained' ? ['1p1c-spin'] : ['1p1c-batch256', '1p1c-pinned'])]);
      for (const v of run.variants) {
        expect(v.error).toBeUndefined();
        const it0 = v.iterations[0];
        expect(it0.latency.count).toBe(400);
        expect(it0.latency.p50Us).toBeGreaterThan(0);
        expect(it0.latency.p99Us).toBeGreaterThanOrEqual(it0.latency.p50Us);
        expect(it0.latency.loop).toBe(scenario === 'latency-sustained' ? 'open' : 'closed');
        expect(it0.extra.workers).toBe(v.config.consumers);
        // one partition per worker: the no-op handler, matched by delivery order
        expect(it0.verifiedBy).toMatch(/each worker exactly its partition's share/);
        expect(v.delivery).toMatchObject({ sent: 400, received: 400, lost: 0, duplicated: 0, ok: true });
        // The pinned row ran the publisher on the first CPU and its consumer on the others.
        if (v.id.endsWith('-pinned')) {
          expect(it0.extra.publisherCpu).toBeGreaterThanOrEqual(0);
          expect(it0.extra.consumerCpus).toBeGreaterThanOrEqual(1);
        } else expect(it0.extra.publisherCpu).toBeUndefined();
      }
    }, 120_000);
  }

  it('latency-burst with more partitions than workers falls back to handlers that read payload ids', async () => {
    const file = join(dir, 'burst-4p2c.json');
    const r = await runCli(['run', '--scenario', 'latency-burst', '--transport', 'native', '--partitions', '4', '--consumers', '2', '--message-count', '400', '--iterations', '1', '--warmup', '0', '--quiet', '--json', file]);
    expect(r.code, r.stderr).toBe(0);
    const [v] = JSON.parse(readFileSync(file, 'utf8')).runs[0].variants;
    expect(v.id).toBe('4p2c');
    expect(v.iterations[0].verifiedBy).toMatch(/payload ids counted/);
    expect(v.iterations[0].latency.count).toBe(400);
    expect(v.delivery).toMatchObject({ sent: 400, received: 400, lost: 0, duplicated: 0, ok: true });
  }, 120_000);

  it('native-throughput: addon and JS fallback both deliver every event to the worker', async () => {
    const file = join(dir, 'nt.json');
    const r = await runCli(['run', '--scenario', 'native-throughput', '--message-count', '20000', '--iterations', '1', '--warmup', '0', '--quiet', '--json', file]);
    expect(r.code, r.stderr).toBe(0);
    const run = JSON.parse(readFileSync(file, 'utf8')).runs[0];
    expect(run.variants.map((v: { id: string }) => v.id)).toEqual(['addon', 'js-fallback']);
    for (const v of run.variants) {
      expect(v.delivery).toMatchObject({ sent: 20_000, received: 20_000, lost: 0, ok: true });
      expect(v.iterations[0].extra).toMatchObject({ pushed: 20_000, popped: 20_000, dropped: 0 });
      expect(v.seed.throughput).toBe(5_000_000);
    }
  }, 120_000);
});
