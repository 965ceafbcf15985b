/**
 * Edge cases of the Redis Streams consumer, each against a real redis-server: close() during read errors,
 * read-ahead entries that reclaim must not steal, idle consumers, admin and error types (a server that
 * refuses scripts or XDEL: redis-acl.test.ts).
 */
import { describe, expect, it } from 'vitest';
import { ConnectionError, createEventBus, TransportError, type EventBus, type Logger } from '../../src/index.js';
import { RedisServer, uniquePrefix } from '../helpers/redis-server.js';
import { boundedClose, sleep, waitFor } from '../helpers/wait.js';
import { dlqKey, retryKey, streamKey, type RedisStreamsTransport } from '../../transports/redis-streams/index.js';
import { stringifyAnyDepth } from '../../src/deep-json.js';
import { deleteIfNothingPending } from '../../transports/redis-streams/prune-consumer.js';
import { events, fastRead, orders, recordingLogger, redisForFile } from './redis-common.js';

type Bus = EventBus<typeof events>;

const r = redisForFile();

async function bus(prefix: string, transport: Record<string, unknown> = {}, logger?: Logger): Promise<Bus> {
  const b = await createEventBus({ service: 'review', events, ...(logger ? { logger } : {}), transport: { type: 'redis-streams', url: r.server.url, prefix, partitions: 1, ...transport } });
  r.cleanup.push(() => b.close());
  return b;
}

describe('redis-streams consumer: close()', () => {
  it('close() returns while the read loop is backing off after read errors', async () => {
    const prefix = uniquePrefix('closeback');
    const logger = recordingLogger();
    const b = await bus(prefix, {}, logger);
    const sub = await b.subscribe('order.created', { group: 'g', ...fastRead }, () => undefined);
    // Another writer clobbers the stream with a string: every read fails (WRONGTYPE) and the loop backs off.
    const key = streamKey(prefix, 'order.created', 0);
    await r.raw.del(key);
    await r.raw.set(key, 'not a stream');
    await waitFor(() => logger.messages.filter((m) => m.includes('read failed')).length >= 4, 10_000, 'failing reads');
    expect(await boundedClose(sub, 5000)).toBe('closed');
    await r.raw.del(key);
  });

  it('close() does not start entries read ahead: they go to the group as first deliveries; a batch entry begun runs to its end', async () => {
    const prefix = uniquePrefix('closeahead');
    const a = await bus(prefix, { entryMode: 'event' });
    const started: number[] = [];
    // One at a time, 200 ms each, with the other 19 entries read ahead and queued.
    const sub = await a.subscribe('order.created', { group: 'g', consumer: 'a', concurrency: 1, blockMs: 100, minIdleMs: 300 }, async (e) => {
      started.push(e.data.seq);
      await sleep(200);
    });
    await a.publishMany('order.created', orders(20));
    await waitFor(() => started.length === 1, 5000, 'first handler');
    const t0 = Date.now();
    expect(await boundedClose(sub, 10_000)).toBe('closed');
    // Only the running handler is waited for, not the 19 read ahead of it (4 s of handlers).
    expect(Date.now() - t0).toBeLessThan(1000);
    expect(started).toEqual([0]);
    const b = await bus(prefix, { entryMode: 'event' });
    const later: string[] = [];
    await b.subscribe('order.created', { group: 'g', consumer: 'b', concurrency: 8, blockMs: 100, minIdleMs: 300 }, (e, ctx) => void later.push(`${e.data.seq}@${ctx.attempt}`));
    await waitFor(() => later.length >= 19, 10_000, 'the rest reclaimed');
    await sleep(300);
    expect(later.sort()).toEqual(Array.from({ length: 19 }, (_, i) => `${i + 1}@1`).sort());

    // Batch entries: the one begun finishes (its finished events are not delivered again); the next is left.
    const p2 = uniquePrefix('closebatch');
    const c = await bus(p2);
    const ran: number[] = [];
    const sub2 = await c.subscribe('order.created', { group: 'g', consumer: 'c', concurrency: 1, blockMs: 100, minIdleMs: 60_000 }, async (e) => {
      ran.push(e.data.seq);
      await sleep(50);
    });
    await c.publishMany('order.created', orders(5));
    await c.flush();
    await c.publishMany('order.created', orders(5, 5));
    await waitFor(() => ran.length === 1, 5000, 'first handler');
    expect(await boundedClose(sub2, 10_000)).toBe('closed');
    expect(ran).toEqual([0, 1, 2, 3, 4]);
    const pending = (await r.raw.xpending(streamKey(p2, 'order.created', 0), 'g')) as [number, ...unknown[]];
    expect(pending[0]).toBe(1);
  });
});

describe('redis-streams consumer: events nested deeper than JSON.stringify recurses', () => {
  // JSON.parse reads any depth; JSON.stringify throws RangeError at a few thousand levels.
  const deep = (depth: number): string => `${'['.repeat(depth)}${']'.repeat(depth)}`;

  it('one another producer wrote is dead-lettered (schema refuses it) and retried (handler throws) instead of staying pending forever', async () => {
    const prefix = uniquePrefix('deep');
    const b = await bus(prefix);
    const key = streamKey(prefix, 'order.created', 0);
    const seen: number[] = [];
    await b.subscribe('order.created', { group: 'g', ...fastRead, maxDeliveries: 2 }, (e) => void seen.push(e.data.seq));
    await r.raw.xadd(key, '*', 'data', deep(100_000));
    await b.publish('order.created', { orderId: 'after', amount: 1, seq: 1 });
    await waitFor(async () => (await r.raw.xlen(dlqKey(prefix, 'order.created', 0))) === 1, 5000, 'the dead letter');
    const [letter] = await b.deadLetters('order.created');
    expect(letter!.valid).toBe(false);
    expect(stringifyAnyDepth((letter!.event as { data: unknown }).data)).toBe(deep(100_000)); // (toEqual recurses too)
    await waitFor(async () => ((await r.raw.xpending(key, 'g')) as [number])[0] === 0, 5000, 'nothing pending');
    expect(seen).toEqual([1]);

    // Consumed unchecked, the handler fails once: the retry entry carries the whole value.
    const p2 = uniquePrefix('deepretry');
    const c = await createEventBus({ service: 'review', events, validateOnConsume: false, transport: { type: 'redis-streams', url: r.server.url, prefix: p2, partitions: 1 } });
    r.cleanup.push(() => c.close());
    const depths: string[] = [];
    await c.subscribe('order.created', { group: 'g', ...fastRead, retry: { backoff: { initialMs: 10, maxMs: 10 } } }, (e, ctx) => {
      let d = 0;
      for (let v: unknown = e.data; Array.isArray(v) && v.length > 0; v = v[0]) d++;
      depths.push(`${d}@${ctx.attempt}`);
      if (ctx.attempt === 1) throw new Error('once');
    });
    await r.raw.xadd(streamKey(p2, 'order.created', 0), '*', 'data', deep(100_000));
    await waitFor(() => depths.length === 2, 5000, 'the retry');
    expect(depths).toEqual(['99999@1', '99999@2']);
  });
});

describe('redis-streams consumer: reclaim', () => {
  it("two subscriptions of one group in one process (default names) do not run each other's pending entries", async () => {
    const prefix = uniquePrefix('twosubs');
    const a = await bus(prefix, { entryMode: 'event' });
    const runs: string[] = [];
    let release = false;
    const first = await a.subscribe('order.created', { group: 'g', concurrency: 4, blockMs: 100, minIdleMs: 60_000 }, async (e) => {
      runs.push(`first:${e.data.seq}`);
      await waitFor(() => release, 20_000, 'release');
    });
    await a.publishMany('order.created', orders(4));
    await waitFor(() => runs.length === 4, 5000, 'first runs all four');
    // The second drains its own pending entries at start: it gets a name of its own, or it would take the first's four.
    const second = await a.subscribe('order.created', { group: 'g', concurrency: 4, blockMs: 100, minIdleMs: 60_000 }, (e) => void runs.push(`second:${e.data.seq}`));
    await sleep(500);
    release = true;
    expect(runs.sort()).toEqual(['first:0', 'first:1', 'first:2', 'first:3']);
    expect(second.consumer).toBe(`${first.consumer}#2`);
  });

  it('entries read ahead while prefetch is full are kept alive, not stolen by another consumer', async () => {
    const prefix = uniquePrefix('ahead');
    const a = await bus(prefix, { entryMode: 'event' });
    const b = await bus(prefix, { entryMode: 'event' });
    const handled = new Map<number, string[]>();
    const note = (seq: number, who: string): void => void handled.set(seq, [...(handled.get(seq) ?? []), who]);
    const opts = { group: 'g', minIdleMs: 600, blockMs: 200 };
    let release = false;
    // A: one at a time, and the first event takes long (well past minIdleMs).
    await a.subscribe('order.created', { ...opts, consumer: 'a', concurrency: 1, prefetch: 1 }, async (e) => {
      note(e.data.seq, 'a');
      if (e.data.seq === 0) await waitFor(() => release, 20_000, 'release');
    });
    await a.publish('order.created', { orderId: 'o-0', amount: 0, seq: 0 });
    await waitFor(() => handled.has(0), 5000, 'a to start seq 0');
    await a.publish('order.created', { orderId: 'o-1', amount: 1, seq: 1 });
    // Seq 1 is delivered to A (its read-ahead) while A is busy with seq 0.
    await waitFor(async () => ((await r.raw.xpending(streamKey(prefix, 'order.created', 0), 'g')) as [number])[0] === 2, 5000, 'both entries pending on a');
    await b.subscribe('order.created', { ...opts, consumer: 'b' }, (e) => note(e.data.seq, 'b'));
    // Five times minIdleMs: B would have reclaimed seq 1 from A by now if A did not keep it alive.
    await waitFor(() => handled.has(1), 3000, 'seq 1 handled').catch(() => undefined);
    release = true;
    await waitFor(() => handled.get(1)?.includes('a') === true || handled.get(1)?.length === 2, 5000, 'a to finish');
    expect(Object.fromEntries(handled)).toEqual({ 0: ['a'], 1: ['a'] });
  });
  it('reclaimed entries get their delivery counts even when the reclaimer holds many entries between them', async () => {
    const prefix = uniquePrefix('counts');
    const key = streamKey(prefix, 'order.created', 0);
    const minIdleMs = 1000;
    // A consumer "dead" took 60 entries and died.
    await r.raw.xgroup('CREATE', key, 'g', '$', 'MKSTREAM');
    const ids: string[] = [];
    for (let seq = 0; seq < 60; seq++) ids.push((await r.raw.xadd(key, '*', 'data', JSON.stringify({ orderId: `o-${seq}`, amount: seq, seq })))!);
    await r.raw.xreadgroup('GROUP', 'g', 'dead', 'COUNT', 60, 'STREAMS', key, '>');
    await waitFor(async () => ((await r.raw.xpending(key, 'g', 'IDLE', minIdleMs, '-', '+', 100, 'dead')) as unknown[]).length === 60, 10_000, 'dead entries idle');
    // "live" (restarting) has just taken over the 40 in the middle: not idle, so not reclaimed again.
    await r.raw.xclaim(key, 'g', 'live', 0, ...ids.slice(10, 50), 'JUSTID');
    const b = await bus(prefix);
    const attempts = new Map<number, number>();
    let release = false;
    await b.subscribe('order.created', { group: 'g', consumer: 'live', concurrency: 4, minIdleMs, blockMs: 200 }, async (e, ctx) => {
      if (!attempts.has(e.data.seq)) attempts.set(e.data.seq, ctx.attempt);
      if (e.data.seq === 10) await waitFor(() => release, 20_000, 'release'); // the serial pending drain stops here
    });
    const reclaimed = [...Array.from({ length: 10 }, (_, i) => i), ...Array.from({ length: 10 }, (_, i) => 50 + i)];
    try {
      await waitFor(() => reclaimed.every((seq) => attempts.has(seq)), 10_000, 'the 20 entries of the dead consumer');
      // Each was delivered once to "dead" and once more by the reclaim: this is its second attempt.
      expect(Object.fromEntries(reclaimed.map((seq) => [seq, attempts.get(seq)]))).toEqual(Object.fromEntries(reclaimed.map((seq) => [seq, 2])));
    } finally {
      release = true;
    }
  });
});

describe('redis-streams consumer: deleting idle consumers', () => {
  it('a consumer that read entries after it was found idle is not deleted (its pending entries would be dropped)', async () => {
    const key = streamKey(uniquePrefix('prune'), 'order.created', 0);
    await r.raw.xgroup('CREATE', key, 'g', '0', 'MKSTREAM');
    await r.raw.xadd(key, '*', 'a', '1');
    await r.raw.xgroup('CREATECONSUMER', key, 'g', 'idle');
    await r.raw.xreadgroup('GROUP', 'g', 'busy', 'COUNT', 1, 'STREAMS', key, '>');
    expect(await deleteIfNothingPending(r.raw, key, 'g', 'busy')).toBe('busy');
    expect(await deleteIfNothingPending(r.raw, key, 'g', 'idle')).toBe('deleted');
    const names = ((await r.raw.xinfo('CONSUMERS', key, 'g')) as unknown[][]).map((row) => row[1]);
    expect(names).toEqual(['busy']);
    expect(await r.raw.xpending(key, 'g')).toEqual([1, expect.any(String), expect.any(String), [['busy', '1']]]);
  });

  it('a stream that fails does not stop the deletion of idle consumers on the others', async () => {
    const prefix = uniquePrefix('prunefail');
    const key0 = streamKey(prefix, 'order.created', 0);
    const key1 = streamKey(prefix, 'order.created', 1);
    const b = await bus(prefix, { partitions: 2 });
    await b.subscribe('order.created', { group: 'g', blockMs: 200, minIdleMs: 800, deleteIdleConsumersMs: 1 }, () => undefined);
    await r.raw.xgroup('CREATECONSUMER', key1, 'g', 'gone');
    // Someone clobbers partition 0's stream: XINFO CONSUMERS on it fails (WRONGTYPE) from now on.
    await r.raw.del(key0);
    await r.raw.set(key0, 'not a stream');
    const consumers = async () => ((await r.raw.xinfo('CONSUMERS', key1, 'g')) as unknown[][]).map((row) => String(row[1]));
    // A failure on partition 0 does not end the housekeeping pass: partition 1 is still pruned.
    await waitFor(async () => !(await consumers()).includes('gone'), 5000, "partition 1's idle consumer to be deleted");
  });
});

describe('redis-streams consumer: admin', () => {
  it('groups() counts pending entries of the retry streams too, as pending() does', async () => {
    const prefix = uniquePrefix('adminretry');
    const a = await bus(prefix);
    await a.subscribe('order.created', { group: 'g', ...fastRead, retry: { backoff: { initialMs: 60_000, maxMs: 60_000 } } }, () => {
      throw new Error('later');
    });
    await a.publish('order.created', { orderId: 'o-0', amount: 0, seq: 0 });
    const admin = await (a.transport as RedisStreamsTransport).admin();
    // The failed event waits in the retry stream, delivered to the consumer (pending) until due, once the
    // original entry is acked (until then both are pending: wait for that to pass, not for a count of 1).
    const settled = async () => {
      const [g] = await admin.groups('order.created');
      return g?.retrying === 1 && (await admin.pending('order.created', 'g')).total === 1;
    };
    await waitFor(settled, 5000, 'the retry entry pending, the original acked');
    expect(await admin.groups('order.created')).toEqual([expect.objectContaining({ group: 'g', pending: 1, retrying: 1 })]);
  });

  it("idle()'s count of what is left counts a retry entry once (it is pending and in the retry stream)", async () => {
    const prefix = uniquePrefix('idlecount');
    const a = await bus(prefix, { partitions: 2 });
    await a.subscribe('order.created', { group: 'g', ...fastRead, retry: { backoff: { initialMs: 60_000, maxMs: 60_000 } } }, () => {
      throw new Error('later');
    });
    await a.publishMany(
      'order.created',
      [0, 1, 2, 3, 4].map((seq) => ({ orderId: `o-${seq}`, amount: seq, seq })),
      { key: (o) => o.orderId },
    );
    const admin = await (a.transport as RedisStreamsTransport).admin();
    await waitFor(async () => (await admin.groups('order.created'))[0]?.retrying === 5 && (await admin.pending('order.created', 'g')).total === 5, 5000, 'five retries pending');
    // 5, not 10: a retry entry counts once, not as pending and again as retrying.
    expect(await admin.unfinished('order.created', 'g')).toBe(5);
    await expect(a.idle({ timeoutMs: 100 })).rejects.toThrow(/group "g": 5\b/);
  });

  it('an acked retry entry left in the retry stream (its XDEL failed, or its consumer died before it) does not hold idle() up', async () => {
    const prefix = uniquePrefix('idleleft');
    const a = await bus(prefix);
    let fails = 1;
    await a.subscribe('order.created', { group: 'g', ...fastRead, retry: { backoff: { initialMs: 10, maxMs: 10 } } }, () => {
      if (fails-- > 0) throw new Error('once');
    });
    // One event retried and finished: its retry entry acked and deleted as usual.
    await a.publish('order.created', { orderId: 'o-0', amount: 0, seq: 0 });
    await a.idle({ timeoutMs: 5000 });
    // A retry entry acked without its XDEL, as the consumer would leave it.
    const rk = retryKey(prefix, 'order.created', 0, 'g');
    // In one MULTI, so the subscription's blocked read is not given it: past the group's last delivery, not pending.
    await r.raw.multi().xadd(rk, '*', 'v', '1', 'kind', 'event', 'id', 'x', 'type', 'order.created', 'source', 's', 'time', '1', 'data', '{}').xgroup('SETID', rk, 'g', '$').exec();
    expect(await r.raw.xlen(rk)).toBe(1);
    const admin = await (a.transport as RedisStreamsTransport).admin();
    expect(await admin.unfinished('order.created', 'g')).toBe(0);
    expect((await admin.groups('order.created'))[0]?.retrying).toBe(0);
    await a.idle({ timeoutMs: 1000 });
  });
});

describe('redis-streams consumer: error types', () => {
  it('subscribe rejects with TransportError when the group cannot be created (a key of another type)', async () => {
    const prefix = uniquePrefix('wrongtype');
    const b = await bus(prefix);
    await r.raw.set(streamKey(prefix, 'order.created', 0), 'not a stream');
    const err = await b.subscribe('order.created', { group: 'g', ...fastRead }, () => undefined).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(TransportError);
    expect((err as TransportError).message).toContain('WRONGTYPE');
    expect(String((err as TransportError).cause)).toContain('WRONGTYPE');
    await r.raw.del(streamKey(prefix, 'order.created', 0));
  });

  it('subscribe rejects with ConnectionError when Redis went away after the bus connected', async () => {
    const s = await RedisServer.start();
    r.cleanup.push(() => s.stop());
    const b = await createEventBus({
      service: 'review',
      events,
      transport: { type: 'redis-streams', url: s.url, prefix: uniquePrefix('gone'), commandTimeoutMs: 300 },
    });
    r.cleanup.push(() => b.close());
    await b.publish('order.created', { orderId: 'o-0', amount: 0, seq: 0 }); // connected
    await s.stop();
    const err = await b.subscribe('order.created', { group: 'g', ...fastRead }, () => undefined).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ConnectionError);
  });

  it('deadLetters and every admin command reject with typed errors naming the command: a key of another type, Redis gone', async () => {
    const prefix = uniquePrefix('admintyped');
    const b = await bus(prefix);
    const admin = await (b.transport as RedisStreamsTransport).admin();
    await r.raw.set(dlqKey(prefix, 'order.created', 0), 'not a stream');
    for (const call of [() => b.deadLetters('order.created'), () => admin.replayDeadLetters('order.created'), () => admin.purgeDeadLetters('order.created')]) {
      const err = await call().catch((e: unknown) => e);
      expect(err).toBeInstanceOf(TransportError);
      expect((err as Error).message).toMatch(/^XRANGE .* failed: WRONGTYPE/);
    }
    await r.raw.del(dlqKey(prefix, 'order.created', 0));
    const s = await RedisServer.start();
    r.cleanup.push(() => s.stop());
    const gone = await createEventBus({ service: 'review', events, transport: { type: 'redis-streams', url: s.url, prefix, commandTimeoutMs: 300 } });
    r.cleanup.push(() => gone.close());
    const goneAdmin = await (gone.transport as RedisStreamsTransport).admin();
    await s.stop();
    for (const call of [
      () => gone.deadLetters('order.created'),
      () => goneAdmin.listStreams(),
      () => goneAdmin.replayDeadLetters('order.created'),
      () => goneAdmin.purgeDeadLetters('order.created'),
    ]) {
      const err = await call().catch((e: unknown) => e);
      expect(err).toBeInstanceOf(ConnectionError);
      expect((err as Error).message).not.toContain('Cluster'); // the hint fits the client
    }
  });
});
