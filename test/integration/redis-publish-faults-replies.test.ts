/**
 * Faults on the publishing side against real redis-server processes: error replies (WRONGTYPE, OOM) for some
 * entries of a write, and which publishes they reject.
 */
import { describe, expect, it } from 'vitest';
import { Redis } from 'ioredis';
import { PublishPartialError, TransportError } from '../../src/index.js';
import { uniquePrefix, withRedis } from '../helpers/redis-server.js';
import { streamKey } from '../../transports/redis-streams/index.js';
import { keyFor, perTestResources } from './fault-harness.js';
import { order } from './redis-common.js';

const { cleanup, server, bus } = perTestResources();

/** Sets `maxmemory` to what the server uses now plus 256 KB: writes beyond that are refused with OOM. */
async function roomFor256KbMore(port: number): Promise<void> {
  await withRedis(port, async (c) => {
    const used = Number(/used_memory:(\d+)/.exec((await c.info('memory')) as string)![1]);
    await c.config('SET', 'maxmemory', String(used + 256 * 1024));
  });
}

/**
 * A per-event-entry bus (one partition) whose Redis holds event 0 and has room for ~256 KB more, and 2,000
 * orders padded to ~550 bytes (seq 1..2000): some of a burst of them fit, Redis refuses the rest with OOM.
 * `stored()` reads back the seqs of the stream, in order.
 */
async function perEventNearlyFull(name: string) {
  const s = await server();
  const prefix = uniquePrefix(name);
  const b = await bus(s.url, { partitions: 1, entryMode: 'event' }, prefix);
  await b.publish('order.created', order(0));
  await roomFor256KbMore(s.port);
  const payloads = Array.from({ length: 2000 }, (_, i) => ({ ...order(i + 1), orderId: `o-${i + 1}-${'x'.repeat(500)}` }));
  const stored = () => withRedis(s.port, async (c) => ((await c.xrange(streamKey(prefix, 'order.created', 0), '-', '+')) as [string, string[]][]).flatMap(([, f]) => seqsOf(f)));
  return { b, payloads, stored };
}

/** The `seq` of every event in a stream entry's fields, batch or per-event (docs/wire-format.md). */
function seqsOf(fields: string[]): number[] {
  const at = fields.indexOf('payloads');
  if (at >= 0) return (JSON.parse(fields[at + 1]!) as { seq: number }[]).map((d) => d.seq);
  return [(JSON.parse(fields[fields.indexOf('data') + 1]!) as { seq: number }).seq];
}

/**
 * A bus of `order.created` over 2 partitions whose partition 1 stream key holds a string: Redis refuses
 * every write there (WRONGTYPE) and takes partition 0's.
 */
async function partitionOneRefused(name: string) {
  const s = await server();
  const prefix = uniquePrefix(name);
  const b = await bus(s.url, { partitions: 2 }, prefix);
  const raw = new Redis(s.url);
  cleanup.push(() => raw.disconnect());
  await raw.set(streamKey(prefix, 'order.created', 1), 'not a stream');
  return { b, raw, prefix };
}

describe('redis-streams: publish faults', () => {
  it("an error reply for one partition rejects only that partition's events, with TransportError", async () => {
    const { b, raw, prefix } = await partitionOneRefused('wrongtype');
    const k0 = keyFor(0, 2);
    const k1 = keyFor(1, 2);
    const outcomes = await Promise.all(
      [k0, k1, k0, k1].map((k, i) =>
        b.publish('order.created', order(i), { key: k }).then(
          () => 'ok',
          (e: unknown) => e,
        ),
      ),
    );
    expect(outcomes[0]).toBe('ok');
    expect(outcomes[2]).toBe('ok');
    expect(outcomes[1]).toBeInstanceOf(TransportError);
    expect(outcomes[3]).toBeInstanceOf(TransportError);
    expect(String((outcomes[1] as Error).message)).toContain('WRONGTYPE');
    expect(await raw.xlen(streamKey(prefix, 'order.created', 0))).toBeGreaterThan(0);
  });

  it('OOM: every publish rejects with TransportError naming the reply, none hangs', async () => {
    const s = await server();
    const b = await bus(s.url, { partitions: 2 });
    await b.publish('order.created', order(0));
    await withRedis(s.port, (c) => c.config('SET', 'maxmemory', '1'));
    const outcomes = await Promise.all(
      Array.from({ length: 20 }, (_, i) =>
        b.publish('order.created', order(i), { key: `k${i}` }).then(
          () => 'ok',
          (e: unknown) => e,
        ),
      ),
    );
    for (const o of outcomes) {
      expect(o).toBeInstanceOf(TransportError);
      expect((o as Error).message).toContain('OOM');
    }
  });

  it('per-event entries: Redis refusing part of a unit (OOM) rejects exactly the publishes it did not store', async () => {
    const { b, payloads, stored } = await perEventNearlyFull('oompart');
    const outcomes = await Promise.all(
      payloads.map((d) =>
        b.publish('order.created', d).then(
          () => 'ok',
          (e: unknown) => e,
        ),
      ),
    );
    const ok = outcomes.flatMap((o, i) => (o === 'ok' ? [i + 1] : []));
    expect(ok.length).toBeGreaterThan(0);
    expect(ok.length).toBeLessThan(2000);
    for (const o of outcomes) if (o !== 'ok') expect(String((o as Error).message)).toContain('OOM');
    // Each publish settles with its own entry's fate: a unit (one tick's publishes) is not rejected as a whole
    // when Redis stored its first events.
    expect(await stored()).toEqual([0, ...ok]);
  });

  it('publishMany refused for one partition (WRONGTYPE): PublishPartialError names exactly the payloads not written, and publishing them again completes the call', async () => {
    const { b, raw, prefix } = await partitionOneRefused('manypart');
    const k0 = keyFor(0, 2);
    const k1 = keyFor(1, 2);
    const payloads = Array.from({ length: 300 }, (_, i) => order(i));
    const keyOf = (d: { seq: number }) => (d.seq % 3 === 0 ? k1 : k0);
    const err = await b.publishMany('order.created', payloads, { key: keyOf }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(PublishPartialError);
    const partial = err as PublishPartialError;
    const refused = payloads.flatMap((d, i) => (d.seq % 3 === 0 ? [i] : []));
    expect(partial.failed).toEqual(refused);
    expect(partial.accepted).toBe(200);
    expect(partial.code).toBe('ERR_PUBLISH_PARTIAL');
    expect(partial.retryable).toBe(true);
    expect(partial.cause).toBeInstanceOf(TransportError);
    expect(partial.message).toContain('WRONGTYPE');
    // Every other event is in Redis, in order; the refused ones go through once the key is fixed.
    const stored = async (p: number) => ((await raw.xrange(streamKey(prefix, 'order.created', p), '-', '+')) as [string, string[]][]).flatMap(([, f]) => seqsOf(f));
    expect(await stored(0)).toEqual(payloads.flatMap((d) => (d.seq % 3 === 0 ? [] : [d.seq])));
    await raw.del(streamKey(prefix, 'order.created', 1));
    await b.publishMany(
      'order.created',
      partial.failed.map((i) => payloads[i]!),
      { key: keyOf },
    );
    expect(await stored(1)).toEqual(refused);
  });

  it('publishMany of which nothing was written rejects with the transport error itself', async () => {
    const { b } = await partitionOneRefused('manynone');
    const err = await b
      .publishMany(
        'order.created',
        Array.from({ length: 50 }, (_, i) => order(i)),
        { key: keyFor(1, 2) },
      )
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(TransportError);
    expect((err as Error).message).toContain('WRONGTYPE');
  });

  it('per-event entries: publishMany part-refused by Redis (OOM) lists exactly the events Redis did not store', async () => {
    const { b, payloads, stored } = await perEventNearlyFull('manyoom');
    const err = await b.publishMany('order.created', payloads).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(PublishPartialError);
    const partial = err as PublishPartialError;
    expect(partial.message).toContain('OOM');
    expect(partial.failed.length).toBeGreaterThan(0);
    const failed = new Set(partial.failed);
    const written = payloads.flatMap((d, i) => (failed.has(i) ? [] : [d.seq]));
    expect(written.length).toBe(partial.accepted);
    expect(await stored()).toEqual([0, ...written]);
    // One reply per refused entry, all the same OOM: one distinct failure.
    expect(partial.errors).toHaveLength(1);
  });
});
