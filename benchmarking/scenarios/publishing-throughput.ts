/**
 * publishing-throughput (seed 003): Redis Streams publishing, no consumers. Seed configuration:
 * 100,000 events of 128 B, batches of 4,000 with a 20 ms flush interval, 1 publisher, 3 iterations +
 * 1 warmup; and batching off (batch 1, flush 0) with 1 and 5 publishers. Each configuration is
 * compared with a hand-written ioredis baseline doing the same work, and with the seed's figure. The
 * batched one-publisher configuration is also measured with one publishMany() call of the whole array and,
 * on Redis, with per-event entries beside the peer rows (BullMQ, @moleculer/channels: benchmarking/peers/).
 */
import { autoPipelinedXadd, awaitedXadd, pipelinedArrays } from '../baselines/redis.js';
import { timedPublish, type PublishMode } from '../lib/drive.js';
import { peerRows, peerRunners } from '../peers/index.js';
import type { BenchConfig, Scenario, SeedFigure, Variant } from '../lib/types.js';
import { isRedis, variant } from './helpers.js';
import { TS_REDIS_PUBLISHING } from '../references.js';

/** The TypeScript Redis Streams library's figures by `batch-publishers-size`. */
const SEED = TS_REDIS_PUBLISHING;

function seedFor(c: BenchConfig): SeedFigure | undefined {
  const v = SEED[`${c.batchSize}-${c.publishers}-${c.messageSize}`];
  if (v === undefined) return undefined;
  const note = c.batchSize === 4000 && c.publishers === 1 && c.messageSize === 128 ? 'the TypeScript Redis Streams library gave 33.7K/s with its own CLI on this machine' : undefined;
  // The seed's tables: 100,000 events of 128 B (batch sizes, batching on/off), 10,000 in the message-size one.
  return { source: 'ts-redis-library', throughput: v, note, setup: { transport: 'redis', messageCount: c.messageSize === 4096 ? 10_000 : 100_000 } };
}

/**
 * The library's rows of one configuration (batch size, publishers, flush interval in `cfg`), compared with
 * `baseline`. Batched: each publisher calls publish() for all its events and awaits them together (the
 * batcher bounds what is buffered); unbatched: each publisher awaits every publish(). Batched with one
 * publisher adds the same events in one publishMany() call with the whole array, against the same baseline.
 */
function libraryRows(cfg: BenchConfig, baseline: string | undefined): Variant[] {
  const { batchSize, publishers, flushInterval, messageCount } = cfg;
  const batched = batchSize > 1;
  const id = `${batched ? `batch${batchSize}` : 'unbatched'}-${publishers}p`;
  const label = batched
    ? `batch ${batchSize}, flush ${flushInterval} ms, ${publishers} publisher${publishers > 1 ? 's' : ''}`
    : `batching off, ${publishers} publisher${publishers > 1 ? 's' : ''} awaiting each publish`;
  const rows = [variant(cfg, id, label, 'publish', {}, { mode: batched ? 'publish-groups' : 'concurrent', group: messageCount }, { baseline, seed: seedFor(cfg) })];
  if (batched && publishers === 1 && isRedis(cfg)) rows.push(perEventEntries(cfg, id, label));
  if (batched && publishers === 1) {
    rows.push(
      variant(
        cfg,
        `${id}-publishMany`,
        `publishMany of all ${messageCount.toLocaleString('en-US')}, batch ${batchSize}, flush ${flushInterval} ms, 1 publisher`,
        'publish',
        {},
        { mode: 'publish-many', group: messageCount },
        { baseline, seed: seedFor(cfg) },
      ),
    );
  }
  return rows;
}

/**
 * The batched row with one Redis entry per event (`entryMode: 'event'`): the like-for-like comparison with the
 * peer rows, which write a job or a stream entry per event, where the default batch entries hold many.
 */
function perEventEntries(cfg: BenchConfig, id: string, label: string): Variant {
  const transportOptions = { ...cfg.transportOptions, entryMode: 'event' };
  return variant(cfg, `${id}-event-entries`, `${label}, per-event entries (entryMode 'event')`, 'publish', { transportOptions }, { mode: 'publish-groups', group: cfg.messageCount });
}

/**
 * The ioredis baselines of one configuration on Redis, the one the library rows compare with first.
 * Batched: pipelined XADD of JSON arrays of the batch size. Unbatched: the baseline writes the same
 * per-event entries the library writes (the envelope fields); the one-field loop is kept beside it, for scale.
 */
function ioredisBaselines(cfg: BenchConfig): Variant[] {
  const { batchSize } = cfg;
  if (batchSize > 1) {
    return [
      variant(
        cfg,
        `ioredis-pipelined-arrays-${batchSize}`,
        `ioredis: pipelined XADD of ${batchSize}-event JSON arrays`,
        'pipelinedArrays',
        { publishers: 1 },
        { batch: batchSize },
        { kind: 'baseline' },
      ),
    ];
  }
  return [unbatchedBaseline(cfg, 'envelope'), unbatchedBaseline(cfg, 'minimal')];
}

/** Adds to `into` the baselines it does not hold yet (configurations share some) and returns the first's id. */
function addBaselines(into: Map<string, Variant>, baselines: Variant[]): string {
  for (const b of baselines) if (!into.has(b.id)) into.set(b.id, b);
  return baselines[0]!.id;
}

/** An unbatched XADD baseline: one publisher awaiting each XADD, or several on one auto-pipelined connection. */
function unbatchedBaseline(cfg: BenchConfig, entries: 'envelope' | 'minimal'): Variant {
  const { publishers } = cfg;
  const what = entries === 'envelope' ? ' of the same per-event entries' : ' of one-field entries (d = JSON)';
  if (publishers === 1) return variant(cfg, `ioredis-awaited-xadd-${entries}`, `ioredis: awaited XADD loop${what}`, 'awaitedXadd', {}, { entries }, { kind: 'baseline' });
  return variant(cfg, `ioredis-autopipelined-${publishers}p-${entries}`, `ioredis: auto-pipelined XADD, ${publishers} publishers${what}`, 'autoPipelinedXadd', {}, { entries }, { kind: 'baseline' });
}

export const publishingThroughput: Scenario = {
  name: 'publishing-throughput',
  title: 'Publishing throughput into Redis Streams',
  seed: 'ts-redis-library',
  description: 'publish-only, batched (4,000 / 20 ms) and unbatched (1 and 5 publishers), vs ioredis baselines and the TypeScript Redis Streams library.',
  transports: ['redis', 'native', 'memory', 'noop'],
  takes: ['messageCount', 'messageSize', 'batchSize', 'flushInterval', 'publishers', 'partitions'],
  defaults: { messageCount: 100_000, messageSize: 128, batchSize: 4000, flushInterval: 20, publishers: 1, iterations: 3, warmup: 1 },
  quick: { messageCount: 20_000, iterations: 2, warmup: 1 },
  variants(c, explicit) {
    const batches = explicit.has('batchSize') ? [c.batchSize] : [c.batchSize, 1];
    const pubs = explicit.has('publishers') ? [c.publishers] : [1, 5];
    const out: Variant[] = [];
    const baselines = new Map<string, Variant>();
    for (const batchSize of batches)
      for (const publishers of pubs) {
        const flushInterval = batchSize === 1 ? 0 : c.flushInterval;
        const cfg: BenchConfig = { ...c, batchSize, publishers, flushInterval };
        const baseline = isRedis(c) ? addBaselines(baselines, ioredisBaselines(cfg)) : undefined;
        out.push(...libraryRows(cfg, baseline));
      }
    return [...out, ...baselines.values(), ...peerRows(c, 'publish')];
  },
  runners: {
    publish: (ctx) => timedPublish(ctx, ctx.variant.params['mode'] as PublishMode, Number(ctx.variant.params['group']), ctx.config.publishers),
    pipelinedArrays: (ctx) => pipelinedArrays(ctx, Number(ctx.variant.params['batch'])),
    awaitedXadd,
    autoPipelinedXadd,
    ...peerRunners('publish'),
  },
};
