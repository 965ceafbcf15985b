/**
 * Publish-only runs on Redis count what Redis holds, not what the library says it wrote: the events are
 * read back through a new consumer group (docs/benchmarks.md, Method: Delivery). A stream trimmed to
 * ~100 entries (`maxLen`) while 2,000 per-event entries are written must show up as lost events and a
 * non-zero exit. And a run without --keep-keys leaves no key of its prefix behind. extreme-batching
 * (duration-bound, publishing a pool of 65,536 payloads over and over) is read back the same way. A read-back
 * reads to the end of the streams, so copies past the expected events show up as duplicated.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import { describe, expect, it } from 'vitest';
import { uniquePrefix } from '../helpers/redis-server.js';
import { redisAndDirForFile, runCli } from './run-cli.js';
import { benchBus } from '../../benchmarking/lib/bus.js';
import { GLOBAL_DEFAULTS } from '../../benchmarking/lib/config.js';
import { readBack } from '../../benchmarking/lib/drive.js';
import { sizedPayloads } from '../../benchmarking/lib/payload.js';
import { poolPublishCounts } from '../../benchmarking/scenarios/extreme-batching.js';

const { server, dir } = redisAndDirForFile('readback');

describe('publish-only runs on Redis are read back', () => {
  it('message-size: events trimmed away by Redis are reported lost, and the run fails', async () => {
    const file = join(dir, 'trimmed.json');
    const r = await runCli([
      'run',
      '--scenario',
      'message-size',
      '--transport',
      'redis',
      '--redis-url',
      server().url,
      '--message-size',
      '256',
      '--message-count',
      '2000',
      '--iterations',
      '1',
      '--warmup',
      '0',
      '--transport-option',
      'entryMode=event',
      '--transport-option',
      'maxLen=100',
      '--quiet',
      '--json',
      file,
    ]);
    const run = JSON.parse(readFileSync(file, 'utf8')).runs[0];
    const ours = run.variants.find((v: { id: string }) => v.id === 'size-256');
    expect(ours.iterations[0].verifiedBy).toMatch(/read back from Redis/);
    expect(ours.delivery.sent).toBe(2000);
    expect(ours.delivery.lost).toBeGreaterThan(1000);
    expect(ours.delivery.ok).toBe(false);
    expect(r.code).toBe(1);
    // the baseline writes its own stream (no maxLen): all there
    const base = run.variants.find((v: { id: string }) => v.id === 'ioredis-256');
    expect(base.delivery).toMatchObject({ sent: 2000, lost: 0, duplicated: 0, ok: true });
  }, 120_000);

  it('extreme-batching: read back through a new consumer group, complete', async () => {
    const file = join(dir, 'extreme.json');
    const r = await runCli([
      'run',
      '--scenario',
      'extreme-batching',
      '--transport',
      'redis',
      '--redis-url',
      server().url,
      '--duration',
      '0.3',
      '--publishers',
      '20',
      '--flush-interval',
      '1',
      '--iterations',
      '1',
      '--warmup',
      '0',
      '--quiet',
      '--json',
      file,
    ]);
    expect(r.code, r.stderr + r.stdout).toBe(0);
    const v = JSON.parse(readFileSync(file, 'utf8')).runs[0].variants[0];
    expect(v.iterations[0].verifiedBy).toMatch(/read back from Redis through a new consumer group/);
    expect(v.delivery.sent).toBeGreaterThan(0);
    expect(v.delivery).toMatchObject({ received: v.delivery.sent, lost: 0, duplicated: 0, ok: true });
  }, 120_000);

  it('extreme-batching: events trimmed away by Redis are reported lost, and the run fails', async () => {
    const file = join(dir, 'extreme-trimmed.json');
    const r = await runCli([
      'run',
      '--scenario',
      'extreme-batching',
      '--transport',
      'redis',
      '--redis-url',
      server().url,
      '--duration',
      '0.3',
      '--publishers',
      '20',
      '--flush-interval',
      '1',
      '--iterations',
      '1',
      '--warmup',
      '0',
      '--transport-option',
      'entryMode=event',
      '--transport-option',
      'maxLen=100',
      '--quiet',
      '--json',
      file,
    ]);
    const v = JSON.parse(readFileSync(file, 'utf8')).runs[0].variants[0];
    expect(v.iterations[0].verifiedBy).toMatch(/read back from Redis/);
    // 20 awaiting publishers for 0.3 s write well over the ~100-200 entries MAXLEN ~ 100 keeps.
    expect(v.delivery.sent).toBeGreaterThan(1000);
    expect(v.delivery.lost).toBeGreaterThan(v.delivery.sent / 2);
    expect(v.delivery.ok).toBe(false);
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(/!!! \d+ problem/);
    expect(r.stdout).toMatch(/extreme-batching \/ .*: LOST/);
  }, 120_000);

  it('read-back of a reused payload pool counts each id against the times it was published', async () => {
    const config = { ...GLOBAL_DEFAULTS, transport: 'redis' as const, redisUrl: server().url, keyPrefix: `${uniquePrefix('pool')}:`, partitions: 2 };
    const pool = sizedPayloads(10, 64);
    const bus = await benchBus(config);
    try {
      for (let k = 0; k < 3; k++) await bus.publishMany('bench.sized', pool);
      await bus.publish('bench.sized', pool[4]!);
    } finally {
      await bus.close();
    }
    // Redis holds ids 0..9 three times and id 4 once more; expected: three of each, and id 7 four times.
    const times = new Uint32Array(10).fill(3);
    times[7] = 4;
    const t = await readBack(config, 'bench.sized', times, 2000);
    expect(t.expected).toBe(31);
    expect(t.received).toBe(31);
    expect(t.unique).toBe(30); // the fourth 4 matches nothing; the fourth 7 never came
    expect(t.complete).toBe(false);
  }, 30_000);

  it('read-back reads on past the expected events: copies written after them count as duplicated', async () => {
    const config = {
      ...GLOBAL_DEFAULTS,
      transport: 'redis' as const,
      redisUrl: server().url,
      keyPrefix: `${uniquePrefix('dup')}:`,
      partitions: 1,
      // Entries of one event: a consumer holds at most 8,000 at a time (its prefetch), so the copies are read after the last expected one.
      transportOptions: { entryMode: 'event' },
    };
    const payloads = sizedPayloads(30_000, 64);
    const bus = await benchBus(config);
    try {
      await bus.publishMany('bench.sized', payloads);
      // 10,000 of them again, after all 30,000: a read-back that stopped at 30,000 distinct ids missed them.
      await bus.publishMany('bench.sized', payloads.slice(0, 10_000));
    } finally {
      await bus.close();
    }
    const t = await readBack(config, 'bench.sized', 30_000, 10_000);
    expect(t.unique).toBe(30_000);
    expect(t.received).toBe(40_000);
  }, 30_000);

  it("extreme-batching: the times each pool payload was published, from each publisher's count", () => {
    // publisher w publishes pool[(w + j * publishers) % pool] for j = 0 .. count - 1
    const perPublisher = [5, 4, 4];
    const brute = new Uint32Array(4);
    perPublisher.forEach((n, w) => {
      for (let j = 0; j < n; j++) brute[(w + j * perPublisher.length) % 4]!++;
    });
    expect(Array.from(poolPublishCounts(perPublisher, 4))).toEqual(Array.from(brute));
    expect(poolPublishCounts(perPublisher, 4).reduce((a, b) => a + b, 0)).toBe(13);
  });

  it('broker-throughput produce: read back and complete; no key of the run is left', async () => {
    const file = join(dir, 'produce.json');
    const r = await runCli([
      'run',
      '--scenario',
      'broker-throughput',
      '--transport',
      'redis',
      '--redis-url',
      server().url,
      '--publishers',
      '2',
      '--message-count',
      '3000',
      '--iterations',
      '1',
      '--warmup',
      '1',
      '--quiet',
      '--json',
      file,
    ]);
    expect(r.code, r.stderr + r.stdout).toBe(0);
    const run = JSON.parse(readFileSync(file, 'utf8')).runs[0];
    const produce = run.variants.find((v: { id: string }) => v.id === 'produce');
    expect(produce.iterations[0].verifiedBy).toMatch(/read back from Redis/);
    expect(produce.delivery).toMatchObject({ sent: 3000, received: 3000, lost: 0, duplicated: 0, ok: true });
    const client = new Redis(server().url);
    try {
      expect(await client.keys(`${run.config.keyPrefix}*`)).toEqual([]);
    } finally {
      client.disconnect();
    }
  }, 120_000);
});
