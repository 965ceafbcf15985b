/**
 * Publish-only runs on Redis count what Redis holds, not what the library says it wrote: the events are
 * read back through a new consumer group (docs/benchmarks.md, Method: Delivery). A stream trimmed to
 * ~100 entries (`maxLen`) while 2,000 per-event entries are written must show up as lost events and a
 * non-zero exit. And a run without --keep-keys leaves no key of its prefix behind.
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { RedisServer } from '../helpers/redis-server.js';
import { runCli } from './run-cli.js';

let server: RedisServer;
const dir = mkdtempSync(join(tmpdir(), 'eventlane-bench-readback-'));

beforeAll(async () => {
  server = await RedisServer.start();
});
afterAll(async () => {
  await server?.stop();
  rmSync(dir, { recursive: true, force: true });
});

describe('publish-only runs on Redis are read back', () => {
  it('message-size: events trimmed away by Redis are reported lost, and the run fails', async () => {
    const file = join(dir, 'trimmed.json');
    const r = await runCli([
      'run', '--scenario', 'message-size', '--transport', 'redis', '--redis-url', server.url, '--message-size', '256',
      '--message-count', '2000', '--iterations', '1', '--warmup', '0', '--transport-option', 'entryMode=event',
      '--transport-option', 'maxLen=100', '--quiet', '--json', file,
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

  it('broker-throughput produce: read back and complete; no key of the run is left', async () => {
    const file = join(dir, 'produce.json');
    const r = await runCli([
      'run', '--scenario', 'broker-throughput', '--transport', 'redis', '--redis-url', server.url, '--publishers', '2',
      '--message-count', '3000', '--iterations', '1', '--warmup', '1', '--quiet', '--json', file,
    ]);
    expect(r.code, r.stderr + r.stdout).toBe(0);
    const run = JSON.parse(readFileSync(file, 'utf8')).runs[0];
    const produce = run.variants.find((v: { id: string }) => v.id === 'produce');
    expect(produce.iterations[0].verifiedBy).toMatch(/read back from Redis/);
    expect(produce.delivery).toMatchObject({ sent: 3000, received: 3000, lost: 0, duplicated: 0, ok: true });
    const client = new Redis(server.url);
    try {
      expect(await client.keys(`${run.config.keyPrefix}*`)).toEqual([]);
    } finally {
      client.disconnect();
    }
  }, 120_000);
});
