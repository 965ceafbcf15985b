/**
 * The peer rows (benchmarking/peers/) of publishing-throughput, consumer-groups and end-to-end on Redis: each
 * one, run here for a few hundred events against a redis-server of its own, with a warm-up iteration and a
 * measured one as the CLI runs them, delivers every event exactly once and leaves no key behind. A peer whose
 * package is not installed gets no row and one line on stderr; off Redis there are no peer rows.
 */
import { createRequire } from 'node:module';
import { describe, expect, it, vi } from 'vitest';
import { redisForFile } from '../integration/redis-common.js';
import { resolveConfig } from '../../benchmarking/lib/config.js';
import { runIterationsHere } from '../../benchmarking/lib/iterate.js';
import type { BenchConfig, Scenario, Variant } from '../../benchmarking/lib/types.js';
import { installedVersion, peerRows, versionRange } from '../../benchmarking/peers/index.js';
import { consumerGroups } from '../../benchmarking/scenarios/consumer-groups.js';
import { endToEnd } from '../../benchmarking/scenarios/end-to-end.js';
import { publishingThroughput } from '../../benchmarking/scenarios/publishing-throughput.js';

const require = createRequire(import.meta.url);
const N = 300;
const PEERS = ['peer-bullmq', 'peer-moleculer-channels'];

const r = redisForFile();

function peersOf(scenario: Scenario, flags: Partial<BenchConfig>): Variant[] {
  const { config, explicit } = resolveConfig(scenario, { transport: 'redis', redisUrl: r.server.url, messageCount: N, iterations: 1, warmup: 1, ...flags });
  const c = { ...config, keyPrefix: `peers-test:${scenario.name}:` };
  return scenario.variants(c, explicit).filter((v) => v.kind === 'peer');
}

const cases: [Scenario, Partial<BenchConfig>][] = [
  [publishingThroughput, { batchSize: 4000, publishers: 1 }],
  [consumerGroups, { consumers: 1 }],
  [endToEnd, { rate: 2000 }],
];

describe('peer rows on Redis', () => {
  for (const [scenario, flags] of cases) {
    it(`${scenario.name}: each peer delivers all ${N} events once and leaves no keys`, async () => {
      const peers = peersOf(scenario, flags);
      expect(peers.map((v) => v.id)).toEqual(PEERS);
      for (const v of peers) {
        const [warm, measured] = await runIterationsHere(scenario, { scenario: scenario.name, variant: v, warmups: 1, measured: 1 });
        expect(warm!.warmup, v.id).toBe(true);
        expect(measured, v.id).toMatchObject({ warmup: false, sent: N, received: N, unique: N, lost: 0, duplicated: 0 });
        expect(measured!.notes, v.id).toBeUndefined();
        expect(measured!.throughput, v.id).toBeGreaterThan(0);
        expect(measured!.peakRssMb, v.id).toBeGreaterThan(0);
        if (scenario === endToEnd) expect(measured!.latency, v.id).toMatchObject({ count: N, loop: 'open' });
        expect(await r.raw.dbsize(), `${v.id} left keys`).toBe(0);
      }
    }, 120_000);
  }

  it("publishing-throughput's like-for-like row writes one stream entry per event (entryMode 'event')", async () => {
    const { config, explicit } = resolveConfig(publishingThroughput, { transport: 'redis', redisUrl: r.server.url, messageCount: N, iterations: 1, warmup: 0, batchSize: 4000, publishers: 1 });
    const rows = publishingThroughput.variants({ ...config, keyPrefix: 'peers-test:entries:' }, explicit);
    const row = rows.find((v) => v.id === 'batch4000-1p-event-entries')!;
    expect(row.kind).toBe('eventlane');
    expect(row.config.transportOptions).toEqual({ entryMode: 'event' });
    const [measured] = await runIterationsHere(publishingThroughput, { scenario: publishingThroughput.name, variant: row, warmups: 0, measured: 1, keepKeys: true });
    expect(measured).toMatchObject({ sent: N, received: N, unique: N, lost: 0, duplicated: 0 });
    let entries = 0;
    for (const key of await r.raw.keys('peers-test:entries:*')) if ((await r.raw.type(key)) === 'stream') entries += await r.raw.xlen(key);
    expect(entries).toBe(N);
    await r.raw.flushdb();
  }, 60_000);

  it('labels each peer with its installed version and how it is driven, one consumer, one partition', () => {
    const [bull, mol] = peersOf(consumerGroups, { consumers: 4 });
    expect(bull!.label).toBe(`BullMQ ${versionRange(installedVersion('bullmq')!)} (Worker concurrency 16)`);
    expect(mol!.label).toMatch(/^@moleculer\/channels 0\.\d+\.x \(Redis adapter, handler maxInFlight 16\)$/);
    for (const v of [bull!, mol!]) expect(v.config).toMatchObject({ consumers: 1, partitions: 1 });
  });
});

describe('peer rows', () => {
  it('leave out a peer whose package is missing, saying so once', () => {
    const write = vi.spyOn(process.stderr, 'write').mockImplementation(() => true);
    try {
      const { config } = resolveConfig(endToEnd, { transport: 'redis' });
      const noBull = (p: string) => {
        if (p === 'bullmq') throw new Error(`Cannot find module '${p}'`);
        return require.resolve(p);
      };
      expect(peerRows(config, 'latency', noBull).map((v) => v.id)).toEqual(['peer-moleculer-channels']);
      expect(peerRows(config, 'publish', noBull).map((v) => v.id)).toEqual(['peer-moleculer-channels']);
      const lines = write.mock.calls.map((c) => String(c[0]));
      expect(lines).toEqual(['note: BullMQ peer rows skipped: bullmq not installed (npm install -D bullmq)\n']);
    } finally {
      write.mockRestore();
    }
  });

  it('are none off Redis', () => {
    const { config } = resolveConfig(endToEnd, { transport: 'memory' });
    expect(peerRows(config, 'latency')).toEqual([]);
    expect(endToEnd.variants(config, new Set()).filter((v) => v.kind === 'peer')).toEqual([]);
  });

  it('versions: 0.x releases keep their minor, others their major', () => {
    expect(versionRange('6.7.6')).toBe('6.x');
    expect(versionRange('0.1.8')).toBe('0.1.x');
  });
});
