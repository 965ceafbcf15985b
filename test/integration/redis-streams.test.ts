/**
 * Redis Streams transport against a real redis-server: wire format, groups, work sharing, DLQ,
 * malformed entries, option validation, admin API.
 */
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { Redis } from 'ioredis';
import { ConfigError, createEventBus, type EventBus } from '../../src/index.js';
import { RedisServer, uniquePrefix } from '../helpers/redis-server.js';
import { sleep, waitFor } from '../helpers/wait.js';
import { dlqKey, openRedisStreamsAdmin, streamKey, type RedisStreamsTransport } from '../../transports/redis-streams/index.js';
import { events, fastRead, fastRetry, makeBus, order, orders, warningLogger } from './redis-common.js';

type Bus = EventBus<typeof events>;

let server: { url: string; stop(): Promise<void> };
let raw: Redis;
const open: Bus[] = [];

beforeAll(async () => {
  server = await RedisServer.startOrExternal();
  raw = new Redis(server.url);
});
afterEach(async () => {
  await Promise.allSettled(open.splice(0).map((b) => b.close()));
});
afterAll(async () => {
  raw.disconnect();
  await server.stop();
});

async function bus(extra: Record<string, unknown> = {}, prefix?: string): Promise<Bus> {
  const b = await makeBus(server.url, extra, prefix);
  open.push(b);
  return b;
}

describe('redis-streams: wire format round trip', () => {
  it('batched entries: many events per entry, documented fields, all delivered', async () => {
    const prefix = uniquePrefix('batch');
    const b = await bus({ partitions: 1 }, prefix);
    const seen: number[] = [];
    await b.subscribe('order.created', { group: 'g', ...fastRead }, (e) => void seen.push(e.data.seq));
    await b.publishMany('order.created', orders(1000));
    await waitFor(() => seen.length === 1000, 10_000, '1000 events');
    expect(seen).toEqual(orders(1000).map((o) => o.seq));
    const entries = (await raw.xrange(streamKey(prefix, 'order.created', 0), '-', '+')) as [string, string[]][];
    expect(entries.length).toBeLessThan(1000);
    const f = entries[0]![1];
    expect(f.slice(0, 8)).toEqual(['v', '1', 'kind', 'batch', 'type', 'order.created', 'source', 'it']);
    const field = (name: string) => f[f.indexOf(name) + 1]!;
    const payloads = JSON.parse(field('payloads'));
    expect(payloads[0]).toEqual({ orderId: 'o-0', amount: 0, seq: 0 });
    expect(field('count')).toBe(String(payloads.length));
    expect(field('idw')).toBe('26');
    expect(field('ids')).toHaveLength(26 * payloads.length);
    const times = JSON.parse(field('times'));
    expect(times.filter((_: number, i: number) => i % 2 === 1).reduce((a: number, b: number) => a + b, 0)).toBe(payloads.length);
  });

  it('a caught-up consumer acks as it goes: one-at-a-time publishes leave nothing pending, none redelivered', async () => {
    // Each reply holds one entry (fewer than COUNT), so the acks ride with the next read on the read connection.
    const prefix = uniquePrefix('caughtup');
    const b = await bus({ partitions: 1 }, prefix);
    const seen: number[] = [];
    await b.subscribe('order.created', { group: 'g', ...fastRead, minIdleMs: 60_000 }, (e) => void seen.push(e.data.seq));
    const admin = await (b.transport as RedisStreamsTransport).admin();
    for (const o of orders(30)) {
      const before = seen.length;
      await b.publish('order.created', o);
      await waitFor(() => seen.length === before + 1, 5000, `event ${o.seq}`);
    }
    await waitFor(async () => (await admin.pending('order.created', 'g')).total === 0, 2000, 'no pending entries');
    expect(seen).toEqual(orders(30).map((o) => o.seq));
    await sleep(300); // nothing comes back
    expect(seen).toHaveLength(30);
  });

  it('per-event entries: one entry per event, readable without eventlane', async () => {
    const prefix = uniquePrefix('event');
    const b = await bus({ partitions: 1, entryMode: 'event' }, prefix);
    const seen: number[] = [];
    await b.subscribe('order.created', { group: 'g', ...fastRead }, (e) => void seen.push(e.data.seq));
    await b.publishMany('order.created', orders(300), { key: 'k1' });
    await b.publish('order.created', orders(1, 300)[0]!, { headers: { traceparent: 'tp' }, correlationId: 'c1' });
    await waitFor(() => seen.length === 301, 10_000, '301 events');
    const entries = (await raw.xrange(streamKey(prefix, 'order.created', 0), '-', '+')) as [string, string[]][];
    expect(entries.length).toBe(301);
    const o = Object.fromEntries(entries[300]![1].reduce<string[][]>((acc, v, i, a) => (i % 2 ? acc : [...acc, [v, a[i + 1]!]]), []));
    expect(o).toMatchObject({ v: '1', kind: 'event', type: 'order.created', source: 'it', correlationId: 'c1' });
    expect(JSON.parse(o['data']!)).toEqual({ orderId: 'o-300', amount: 300, seq: 300 });
    expect(JSON.parse(o['headers']!)).toEqual({ traceparent: 'tp' });
    expect(entries[0]![1]).toContain('k1');
  });
});

describe('redis-streams: trimming', () => {
  it("MINID ~ is computed in Redis's time: a client clock 10 minutes ahead trims old entries, not new ones", async () => {
    const prefix = uniquePrefix('minid');
    const key = streamKey(prefix, 'order.created', 0);
    // Two full radix-tree nodes (100 entries each) of old entries, which MINID ~ removes whole.
    for (let i = 1; i <= 200; i++) await raw.xadd(key, `1-${i}`, 'old', '1');
    const realNow = Date.now.bind(Date);
    const skew = vi.spyOn(Date, 'now').mockImplementation(() => realNow() + 10 * 60_000);
    try {
      const b = await bus({ partitions: 1, minIdAgeMs: 60_000 }, prefix);
      for (const o of orders(5)) await b.publish('order.created', o);
      await b.publishMany('order.created', orders(100, 5));
    } finally {
      skew.mockRestore();
    }
    // Taken from the client's clock, MINID would be "now + 9 minutes" in Redis's time, and every XADD would
    // trim everything, its own entry included.
    const left = (await raw.xrange(key, '-', '+')) as [string, string[]][];
    expect(left.filter(([, f]) => f[0] === 'old')).toHaveLength(0);
    const kept = left.flatMap(([, f]) => (f[f.indexOf('kind') + 1] === 'batch' ? JSON.parse(f[f.indexOf('payloads') + 1]!) : [JSON.parse(f[f.indexOf('data') + 1]!)]));
    expect(kept.map((o: { seq: number }) => o.seq)).toEqual(orders(105).map((o) => o.seq));
  });
});

describe('redis-streams: consumer groups', () => {
  it('two groups each get every event', async () => {
    const b = await bus();
    const a = new Set<number>();
    const c = new Set<number>();
    await b.subscribe('order.created', { group: 'billing', ...fastRead }, (e) => void a.add(e.data.seq));
    await b.subscribe('order.created', { group: 'shipping', ...fastRead }, (e) => void c.add(e.data.seq));
    await b.publishMany('order.created', orders(2000));
    await waitFor(() => a.size === 2000 && c.size === 2000, 10_000, 'both groups');
  });

  it('three consumers in one group share the work with no loss', async () => {
    const prefix = uniquePrefix('share');
    const buses = [await bus({ partitions: 3 }, prefix), await bus({ partitions: 3 }, prefix), await bus({ partitions: 3 }, prefix)];
    const counts = [0, 0, 0];
    const seen = new Map<number, number>();
    for (let i = 0; i < 3; i++) {
      await buses[i]!.subscribe('order.created', { group: 'workers', consumer: `c${i}`, concurrency: 4, ...fastRead }, async (e) => {
        counts[i]!++;
        seen.set(e.data.seq, (seen.get(e.data.seq) ?? 0) + 1);
        await sleep(1);
      });
    }
    // Many small writes, so entries spread over the consumers.
    for (let k = 0; k < 60; k++) await buses[0]!.publishMany('order.created', orders(50, k * 50));
    await waitFor(() => seen.size === 3000, 20_000, '3000 events');
    expect(counts.every((c) => c > 0)).toBe(true);
    expect(counts[0]! + counts[1]! + counts[2]!).toBe(3000); // no duplicates in a healthy run
  });

  it('a poison event goes to the DLQ after maxDeliveries; its batch siblings are not redelivered', async () => {
    const prefix = uniquePrefix('poison');
    const b = await bus({ partitions: 1 }, prefix);
    const deliveries = new Map<number, number>();
    const attempts: number[] = [];
    await b.subscribe('order.created', { group: 'g', maxDeliveries: 3, concurrency: 8, ...fastRetry, ...fastRead }, (e, ctx) => {
      deliveries.set(e.data.seq, (deliveries.get(e.data.seq) ?? 0) + 1);
      if (e.data.seq === 13) {
        attempts.push(ctx.attempt);
        throw new Error('poison pill');
      }
    });
    await b.publishMany('order.created', orders(100)); // one batch entry
    const t = b.transport as RedisStreamsTransport;
    await waitFor(async () => (await t.deadLetters('order.created', 'g')).length === 1, 10_000, 'one dead letter');
    await sleep(200);
    const [dead] = await t.deadLetters('order.created', 'g');
    expect(dead).toMatchObject({ type: 'order.created', group: 'g', attempts: 3, partition: 0 });
    expect(dead!.error).toContain('poison pill');
    expect(dead!.event?.data).toEqual({ orderId: 'o-13', amount: 13, seq: 13 });
    expect(attempts).toEqual([1, 2, 3]);
    for (const [seq, n] of deliveries) expect(n, `deliveries of ${seq}`).toBe(seq === 13 ? 3 : 1);
    expect(deliveries.size).toBe(100);
    // Everything acked: nothing pending for the group.
    const admin = await t.admin();
    await waitFor(async () => (await admin.pending('order.created', 'g')).total === 0, 5000, 'no pending entries');
    // Replay puts it back for this group only (its retry stream): three more attempts, dead again.
    let otherSaw13 = 0;
    await b.subscribe('order.created', { group: 'other', ...fastRead }, (e) => {
      if (e.data.seq === 13) otherSaw13++;
    });
    expect(await admin.replayDeadLetters('order.created', { group: 'g' })).toBe(1);
    await waitFor(() => deliveries.get(13) === 6, 10_000, 'three more attempts after replay');
    await waitFor(async () => (await t.deadLetters('order.created', 'g')).length === 1, 10_000, 'dead again');
    expect(attempts).toEqual([1, 2, 3, 1, 2, 3]);
    expect(otherSaw13).toBe(0);
    expect(await admin.purgeDeadLetters('order.created', { group: 'g' })).toBe(1);
    expect(await t.deadLetters('order.created')).toEqual([]);
  });

  it('malformed entries written by someone else go to the DLQ with the reason; the consumer keeps going', async () => {
    const prefix = uniquePrefix('malformed');
    const b = await bus({ partitions: 1 }, prefix);
    const seen: number[] = [];
    await b.subscribe('order.created', { group: 'g', ...fastRead }, (e) => void seen.push(e.data.seq));
    const key = streamKey(prefix, 'order.created', 0);
    await raw.xadd(key, '*', 'foo', 'bar');
    await raw.xadd(key, '*', 'data', '{not json');
    await raw.xadd(key, '*', 'v', '9', 'data', '{}');
    await raw.xadd(key, '*', 'v', '1', 'kind', 'batch', 'count', '2', 'idw', '26', 'ids', 'short', 'times', '[1,2]', 'payloads', '[1,2]');
    // A foreign producer's well-formed per-event entry is delivered.
    await raw.xadd(key, '*', 'data', JSON.stringify({ orderId: 'x', amount: 1, seq: 999 }));
    await b.publishMany('order.created', orders(10));
    await waitFor(() => seen.length === 11, 10_000, 'the good events');
    expect(seen).toContain(999);
    const t = b.transport as RedisStreamsTransport;
    await waitFor(async () => (await t.deadLetters('order.created')).length === 4, 5000, 'four dead letters');
    const dead = await t.deadLetters('order.created');
    const reasons = dead.map((d) => d.error).join('\n');
    expect(reasons).toContain('no field "data"');
    expect(reasons).toContain('not JSON');
    expect(reasons).toContain('unsupported wire version "9"');
    expect(reasons).toContain('field "ids" has 5 chars');
    expect(dead[0]!.raw).toEqual({ foo: 'bar' });
    expect(dead.every((d) => d.event === undefined)).toBe(true);
    expect(await raw.xlen(dlqKey(prefix, 'order.created', 0))).toBe(4);
  });

  it('keeps per-key order with several writes in flight over a pool of connections', async () => {
    const b = await bus({ partitions: 4, pool: { size: 3 } });
    const byKey = new Map<string, number[]>();
    let n = 0;
    await b.subscribe('order.created', { group: 'g', concurrency: 1, ...fastRead }, (e) => {
      n++;
      const list = byKey.get(e.key!) ?? [];
      list.push(e.data.seq);
      byKey.set(e.key!, list);
    });
    const sends: Promise<void>[] = [];
    for (let k = 0; k < 40; k++) sends.push(b.publishMany('order.created', orders(250, k * 250), { key: (o) => `k${o.seq % 10}` }));
    for (let i = 10_000; i < 12_000; i++) sends.push(b.publish('order.created', { orderId: `o-${i}`, amount: i, seq: i }, { key: `k${i % 10}` }));
    await Promise.all(sends);
    await waitFor(() => n >= 12_000, 15_000, '12000 events');
    expect(b.stats().batches).toBeGreaterThan(1);
    for (const [key, seqs] of byKey) expect(seqs, key).toEqual([...seqs].sort((x, y) => x - y));
  });

  it('an idle subscription does not hold up publishing', async () => {
    const b = await bus({ partitions: 2 });
    await b.subscribe('audit.logged', { group: 'idle', blockMs: 10_000 }, () => undefined);
    await b.subscribe('order.created', { group: 'idle2', blockMs: 10_000 }, () => undefined);
    // Publishing goes over the pool, never the blocking read connections: all writes resolve.
    for (let i = 0; i < 20; i++) await b.publishMany('order.created', orders(500, i * 500));
    await Promise.all(orders(200).map((o) => b.publish('order.created', o)));
    expect(b.stats().events).toBe(10_200);
  });
});

describe('redis-streams: options', () => {
  it('invalid transport options name the field', async () => {
    await expect(makeBus(server.url, { pool: { size: 0 } })).rejects.toBeInstanceOf(ConfigError);
    await expect(makeBus(server.url, { pool: { size: 0 } })).rejects.toThrow(/transport\.pool\.size/);
    await expect(makeBus(server.url, { entryMode: 'lines' })).rejects.toThrow(/transport\.entryMode/);
    await expect(makeBus(server.url, { prefix: 'a{b' })).rejects.toThrow(/transport\.prefix/);
    await expect(makeBus(server.url, { bogus: 1 })).rejects.toThrow(/bogus/);
    await expect(makeBus(server.url, { redisOptions: { keyPrefix: 'x:' } })).rejects.toThrow(/transport\.redisOptions.*use transport\.prefix/);
  });

  it('topics naming an event type the bus does not declare are reported (a typo would leave the type on the defaults)', async () => {
    const logger = warningLogger();
    const warnings = logger.warnings;
    const b = await createEventBus({
      service: 'it',
      events,
      logger,
      transport: { type: 'redis-streams', url: server.url, prefix: uniquePrefix('topics'), topics: { 'order.cretaed': { partitions: 4 }, 'audit.logged': { partitions: 2 } } },
    });
    open.push(b);
    expect(warnings).toEqual([{ obj: expect.objectContaining({ topics: ['order.cretaed'] }), msg: expect.stringMatching(/transport\.topics names event types this bus does not declare/) }]);
  });

  it('a URL ioredis cannot use is a ConfigError naming transport.url, at once', async () => {
    for (const url of ['redis://127.0.0.1:notaport', 'http://127.0.0.1:6379', 'redis://h/not-a-db']) {
      const started = Date.now();
      const err = await createEventBus({ service: 'it', events, transport: { type: 'redis-streams', url } }).catch((e: unknown) => e);
      expect(err, url).toBeInstanceOf(ConfigError);
      expect((err as ConfigError).issues.map((i) => i.path.join('.'))).toEqual(['transport.url']);
      expect(Date.now() - started).toBeLessThan(1000);
    }
  });

  it('invalid subscribe options name the field', async () => {
    const b = await bus();
    await expect(b.subscribe('order.created', { group: 'g', blockMs: -5 }, () => undefined)).rejects.toThrow(/blockMs/);
    await expect(b.subscribe('order.created', { group: 'g', minIdleMs: 'x' }, () => undefined)).rejects.toThrow(/minIdleMs/);
    await expect(b.subscribe('order.created', { group: 'g', nope: true }, () => undefined)).rejects.toBeInstanceOf(ConfigError);
  });
});

describe('redis-streams: admin', () => {
  it('groups() tells entries trimmed before a group read them, and counts lag in what the stream holds', async () => {
    const prefix = uniquePrefix('trimmed');
    const key = streamKey(prefix, 'order.created', 0);
    await raw.xgroup('CREATE', key, 'slow', '$', 'MKSTREAM');
    await raw.xgroup('CREATE', key, 'fast', '$');
    for (let i = 0; i < 300; i++) await raw.xadd(key, '*', 'data', JSON.stringify({ orderId: `o-${i}`, amount: i, seq: i }));
    await raw.xreadgroup('GROUP', 'slow', 'c', 'COUNT', 10, 'STREAMS', key, '>');
    await raw.xreadgroup('GROUP', 'fast', 'c', 'COUNT', 300, 'STREAMS', key, '>');
    await raw.xtrim(key, 'MAXLEN', 50);
    const { admin, close } = await openRedisStreamsAdmin({ url: server.url, prefix, partitions: 1 });
    try {
      const groups = Object.fromEntries((await admin.groups('order.created')).map((g) => [g.group, g]));
      // Redis's own lag for 'slow' is 290: it counts the 240 entries trimmed before the group read them.
      expect(groups['slow']).toMatchObject({ lag: 50, trimmed: 240, pending: 10 });
      expect(groups['fast']).toMatchObject({ lag: 0, trimmed: 0, pending: 300 });
      // Trimmed to nothing: no lag is left, the rest of 'slow's was trimmed unread (Redis's lag still says 290).
      await raw.xtrim(key, 'MAXLEN', 0);
      const empty = Object.fromEntries((await admin.groups('order.created')).map((g) => [g.group, g]));
      expect(empty['slow']).toMatchObject({ lag: 0, trimmed: 290 });
      expect(empty['fast']).toMatchObject({ lag: 0, trimmed: 0 });
    } finally {
      await close();
    }
  });

  it('entries trimmed while pending (on this consumer, or on a dead one) are reported as lost to the group', async () => {
    const prefix = uniquePrefix('trimpend');
    const key = streamKey(prefix, 'order.created', 0);
    await raw.xgroup('CREATE', key, 'g', '0', 'MKSTREAM');
    for (let i = 0; i < 4; i++) await raw.xadd(key, '*', 'data', JSON.stringify(order(i)));
    await raw.xreadgroup('GROUP', 'g', 'me', 'COUNT', 2, 'STREAMS', key, '>');
    await raw.xreadgroup('GROUP', 'g', 'dead', 'COUNT', 2, 'STREAMS', key, '>');
    await raw.xtrim(key, 'MAXLEN', 0);
    const logger = warningLogger();
    const warnings = logger.warnings;
    const b = await createEventBus({ service: 'it', events, logger, transport: { type: 'redis-streams', url: server.url, prefix, partitions: 1 } });
    open.push(b);
    await sleep(150); // the dead consumer's entries idle past minIdleMs
    await b.subscribe('order.created', { group: 'g', consumer: 'me', blockMs: 100, minIdleMs: 100 }, () => undefined);
    const lost = () => warnings.filter((w) => w.msg?.startsWith('pending entries were trimmed')).reduce((n, w) => n + Number(w.obj['count']), 0);
    // Both pairs are reported (own ones acked, the dead one's gone from the PEL), not dropped without a word.
    await waitFor(() => lost() === 4, 5000, 'four trimmed pending entries reported');
    // One warning with the count for the own drain (it reads one entry at a time) and one per XAUTOCLAIM, not one per entry.
    expect(warnings.filter((w) => w.msg?.startsWith('pending entries were trimmed')).length).toBeLessThanOrEqual(2);
    expect(await raw.xpending(key, 'g')).toEqual([0, null, null, null]);
  });

  it('a consumer whose group falls behind retention warns that entries were trimmed unread', async () => {
    const prefix = uniquePrefix('trimwarn');
    const logger = warningLogger();
    const warnings = logger.warnings;
    const b = await createEventBus({
      service: 'it',
      events,
      logger,
      drainTimeoutMs: 100,
      transport: { type: 'redis-streams', url: server.url, prefix, partitions: 1, entryMode: 'event', maxLen: 100 },
    });
    open.push(b);
    let release!: () => void;
    const stuck = new Promise<void>((resolve) => (release = resolve));
    await b.subscribe('order.created', { group: 'g', concurrency: 1, prefetch: 1, blockMs: 100, minIdleMs: 200 }, () => stuck);
    try {
      for (const o of orders(600)) await b.publish('order.created', o);
      // A housekeeping pass (every 20th reclaim pass, ~2 s here) may meet the stream while the loop above still
      // publishes, and warn with part of the count; a later pass warns again with the larger one.
      const trimmedWarning = () => warnings.find((x) => x.msg?.startsWith('entries were trimmed') && Number(x.obj['trimmed']) > 300);
      await waitFor(() => trimmedWarning() !== undefined, 10_000, 'the warning');
      expect(trimmedWarning()!.obj).toMatchObject({ group: 'g', stream: streamKey(prefix, 'order.created', 0) });
    } finally {
      release();
    }
  });

  it('lists streams, groups with lag and pending', async () => {
    const prefix = uniquePrefix('admin');
    const b = await bus({ partitions: 2 }, prefix);
    await b.subscribe('order.created', { group: 'g1', ...fastRead }, () => undefined);
    await b.publishMany('order.created', orders(100), { key: 'same' });
    const admin = await (b.transport as RedisStreamsTransport).admin();
    const streams = await admin.listStreams();
    expect(streams.filter((s) => !s.key.includes(':retry:') && !s.key.endsWith(':dlq')).map((s) => s.partition)).toEqual([0, 1]);
    await waitFor(async () => (await admin.groups('order.created'))[0]?.lag === 0, 5000, 'lag 0');
    const groups = await admin.groups('order.created');
    expect(groups).toEqual([expect.objectContaining({ group: 'g1', pending: 0, lag: 0, retrying: 0 })]);
    // The same through a standalone admin handle.
    const standalone = await openRedisStreamsAdmin({ url: server.url, prefix, partitions: 2 });
    try {
      expect((await standalone.admin.groups('order.created')).map((g) => g.group)).toEqual(['g1']);
      expect(await standalone.admin.pending('order.created', 'g1')).toEqual({ total: 0, consumers: {} });
    } finally {
      await standalone.close();
    }
  });
});
