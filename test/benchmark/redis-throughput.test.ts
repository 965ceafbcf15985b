/**
 * Independent check of a Redis throughput figure: after a run with --keep-keys, the events counted in
 * Redis (XLEN of per-event streams) over the time span Redis itself stamped on the entry ids must
 * agree with what the CLI reported.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import { describe, expect, it } from 'vitest';
import { redisAndDirForFile, runCli } from './run-cli.js';

const { server, dir } = redisAndDirForFile('redis');

/** Streams under `prefix` with their length and the span of their entry-id timestamps. */
async function streams(r: Redis, prefix: string): Promise<{ key: string; len: number; spanMs: number }[]> {
  const out = [];
  let cursor = '0';
  do {
    const [next, keys] = await r.scan(cursor, 'MATCH', `${prefix}*`, 'COUNT', 1000);
    cursor = next;
    for (const key of keys) {
      if ((await r.type(key)) !== 'stream') continue;
      const len = await r.xlen(key);
      if (len === 0) continue;
      const first = (await r.xrange(key, '-', '+', 'COUNT', 1))[0]![0];
      const last = (await r.xrevrange(key, '+', '-', 'COUNT', 1))[0]![0];
      out.push({ key, len, spanMs: Number(last.split('-')[0]) - Number(first.split('-')[0]) });
    }
  } while (cursor !== '0');
  return out;
}

describe('Redis throughput agrees with Redis itself', () => {
  it('unbatched publishing: events in Redis over the entry-id time span match the reported throughput', async () => {
    const n = 4000;
    const file = join(dir, 'redis.json');
    const r = await runCli([
      'run',
      '--scenario',
      'publishing-throughput',
      '--transport',
      'redis',
      '--redis-url',
      server().url,
      '--batch-size',
      '1',
      '--publishers',
      '1',
      '--message-count',
      String(n),
      '--iterations',
      '1',
      '--warmup',
      '0',
      '--keep-keys',
      '--no-peers',
      '--quiet',
      '--json',
      file,
    ]);
    expect(r.code, r.stderr + r.stdout).toBe(0);
    const report = JSON.parse(readFileSync(file, 'utf8'));
    const run = report.runs[0];
    expect(report.environment.redisVersion).toMatch(/^\d+\./);
    const client = new Redis(server().url);
    try {
      for (const v of run.variants) {
        expect(v.delivery).toMatchObject({ sent: n, lost: 0, duplicated: 0, ok: true });
        const it0 = v.iterations[0];
        const found = await streams(client, `${run.config.keyPrefix}${v.id}:`);
        const biggest = found.sort((a, b) => b.len - a.len)[0]!;
        // one entry per event when batching is off (ours) and in the awaited XADD baseline
        expect(biggest.len).toBe(n);
        const redisThroughput = n / (Math.max(1, biggest.spanMs) / 1000);
        expect(it0.throughput / redisThroughput).toBeGreaterThan(0.75);
        expect(it0.throughput / redisThroughput).toBeLessThan(1.33);
        expect(it0.durationMs).toBeGreaterThanOrEqual(biggest.spanMs - 2);
      }
      expect(run.variants.map((v: { id: string }) => v.id)).toEqual(['unbatched-1p', 'ioredis-awaited-xadd-envelope', 'ioredis-awaited-xadd-minimal']);
      expect(run.variants[0].baseline).toBe('ioredis-awaited-xadd-envelope');
      expect(run.variants[0].ratios.vsBaseline).toBeGreaterThan(0);
    } finally {
      client.disconnect();
    }
  }, 180_000);
});
