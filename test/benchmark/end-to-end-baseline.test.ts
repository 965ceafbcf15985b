/**
 * The end-to-end scenario's hand-written ioredis baseline: a short CLI run against a redis-server the
 * test starts. The baseline row measures every sent event, the library row carries its p50 and p99
 * ratios to it, and what the baseline left in Redis (`--keep-keys`) is the work it claims: one entry per
 * event with eventlane's per-event fields, all of them read and acked by its group. Off Redis the
 * scenario has no baseline row.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import { describe, expect, it } from 'vitest';
import { redisAndDirForFile, runCli } from './run-cli.js';

const { server, dir } = redisAndDirForFile('e2e');

const BASELINE = 'ioredis-xadd-xreadgroup';

async function keysUnder(r: Redis, prefix: string): Promise<string[]> {
  const out: string[] = [];
  let cursor = '0';
  do {
    const [next, keys] = await r.scan(cursor, 'MATCH', `${prefix}*`, 'COUNT', 1000);
    cursor = next;
    out.push(...keys);
  } while (cursor !== '0');
  return out;
}

/** XINFO GROUPS as objects (field / value pairs). */
async function groups(r: Redis, key: string): Promise<Record<string, unknown>[]> {
  const raw = (await r.xinfo('GROUPS', key)) as unknown[][];
  return raw.map((g) => Object.fromEntries(Array.from({ length: g.length / 2 }, (_, i) => [g[2 * i], g[2 * i + 1]])));
}

describe('end-to-end on Redis', () => {
  it('has an ioredis baseline row that measures every event, and the library row carries p50 / p99 ratios to it', async () => {
    const n = 2000; // fewer than the runner's 10,000 warm-up events, so it warms up with n
    const file = join(dir, 'e2e.json');
    const r = await runCli([
      'run',
      '--scenario',
      'end-to-end',
      '--transport',
      'redis',
      '--redis-url',
      server().url,
      '--message-count',
      String(n),
      '--rate',
      '5000',
      '--iterations',
      '1',
      '--warmup',
      '0',
      '--keep-keys',
      '--no-peers',
      '--json',
      file,
    ]);
    expect(r.code, r.stderr + r.stdout).toBe(0);
    const run = JSON.parse(readFileSync(file, 'utf8')).runs[0];
    expect(run.variants.map((v: { id: string }) => v.id)).toEqual(['steady', BASELINE]);
    const [ours, base] = run.variants;
    expect(base.kind).toBe('baseline');
    expect(ours.baseline).toBe(BASELINE);
    for (const v of [ours, base]) {
      expect(v.delivery).toMatchObject({ sent: n, received: n, lost: 0, duplicated: 0, ok: true });
      const it0 = v.iterations[0];
      expect(it0.latency).toMatchObject({ count: n, loop: 'open' });
      expect(it0.latency.p50Us).toBeGreaterThan(0);
      expect(it0.extra.warmupEvents).toBe(n);
      expect(it0.notes).toBeUndefined();
    }
    const round2 = (x: number) => Math.round(x * 100) / 100;
    expect(ours.ratios.latencyP50VsBaseline).toBe(round2(ours.summary.latency.p50Us / base.summary.latency.p50Us));
    expect(ours.ratios.latencyP99VsBaseline).toBe(round2(ours.summary.latency.p99Us / base.summary.latency.p99Us));
    expect(r.stdout).toContain('[baseline] ioredis: XADD per event');
    // The verdict, wrapped at 120 columns.
    expect(r.stdout.replace(/\n {4}/g, ' ')).toMatch(/p50 \d+\.\d\dx \/ p99 \d+\.\d\dx/);

    const client = new Redis(server().url);
    try {
      const keys = await keysUnder(client, `${run.config.keyPrefix}${BASELINE}:`);
      expect(keys).toHaveLength(1);
      const key = keys[0]!;
      // warm-up and measured events, one entry each
      expect(await client.xlen(key)).toBe(2 * n);
      const entries = await client.xrange(key, '-', '+');
      const ids = new Set<number>();
      for (const [, fields] of entries) {
        expect(fields.filter((_, i) => i % 2 === 0)).toEqual(['v', 'kind', 'id', 'type', 'source', 'time', 'data']);
        const data = fields[13]!;
        expect(data.length).toBeLessThanOrEqual(128);
        ids.add((JSON.parse(data) as { id: number }).id);
      }
      expect(ids.size).toBe(2 * n);
      expect(entries.at(-1)![1][13]).toHaveLength(128);
      // one group, one consumer, everything read and acked
      const g = await groups(client, key);
      expect(g).toHaveLength(1);
      expect(g[0]).toMatchObject({ name: 'g', consumers: 1, pending: 0 });
      if ('entries-read' in g[0]!) expect(g[0]['entries-read']).toBe(2 * n);
    } finally {
      client.disconnect();
    }
  }, 180_000);

  it('off Redis the scenario runs without a baseline row', async () => {
    const file = join(dir, 'memory.json');
    const r = await runCli(['run', '--scenario', 'end-to-end', '--transport', 'memory', '--message-count', '1000', '--rate', '5000', '--iterations', '1', '--warmup', '0', '--quiet', '--json', file]);
    expect(r.code, r.stderr + r.stdout).toBe(0);
    const run = JSON.parse(readFileSync(file, 'utf8')).runs[0];
    expect(run.variants.map((v: { id: string; baseline?: string }) => [v.id, v.baseline])).toEqual([['steady', undefined]]);
    expect(run.variants[0].delivery.ok).toBe(true);
    expect(run.variants[0].iterations[0].latency.count).toBe(1000);
  }, 120_000);
});
