/**
 * Versioned event types on Redis Streams, against a real redis-server: the payload's version is the entry field
 * `dataVersion` in both entry modes (batch entries once for all their events), an entry without it is version 1
 * (an older producer's, or a foreign producer's written with plain XADD), and a bad value is a malformed entry.
 */
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { createEventBus, defineEvents, versioned, VERSION_HEADER, type EventEnvelope, type EventMap } from '../../src/index.js';
import { uniquePrefix } from '../helpers/redis-server.js';
import { waitFor } from '../helpers/wait.js';
import { streamKey } from '../../transports/redis-streams/index.js';
import { fastRead, redisForFile } from './redis-common.js';

const TYPE = 'order.created';
const v1 = z.object({ orderId: z.string(), amount: z.number() });
const v2 = {
  schema: z.object({ orderId: z.string(), total: z.object({ amount: z.number(), currency: z.string() }) }),
  up: (o: z.output<typeof v1>) => ({ orderId: o.orderId, total: { amount: o.amount, currency: 'EUR' } }),
};
const older = defineEvents({ [TYPE]: v1 });
const newer = defineEvents({ [TYPE]: versioned(v1, v2) });

const r = redisForFile({ external: true });

async function busOf<M extends EventMap>(events: M, prefix: string, entryMode: 'batch' | 'event') {
  const b = await createEventBus({ service: 'it', events, transport: { type: 'redis-streams', url: r.server.url, prefix, partitions: 1, entryMode }, logger: false });
  r.cleanup.push(() => b.close());
  return b;
}

/** The fields of every entry of the type's partition stream, as objects. */
async function entries(prefix: string): Promise<Record<string, string>[]> {
  const rows = (await r.raw.xrange(streamKey(prefix, TYPE, 0), '-', '+')) as [string, string[]][];
  return rows.map(([, f]) => Object.fromEntries(Array.from({ length: f.length / 2 }, (_, i) => [f[2 * i]!, f[2 * i + 1]!])));
}

describe('redis-streams: versioned event types', () => {
  for (const entryMode of ['batch', 'event'] as const) {
    it(`${entryMode} entries: a version 1 entry of an older producer reaches a version 2 consumer upcast; dataVersion is on the wire`, async () => {
      const prefix = uniquePrefix(`ver-${entryMode}`);
      const oldProducer = await busOf(older, prefix, entryMode);
      const consumer = await busOf(newer, prefix, entryMode);
      const seen: EventEnvelope[] = [];
      await consumer.subscribe(TYPE, { group: 'g', ...fastRead }, (e) => void seen.push(e));
      await oldProducer.publishMany(TYPE, [
        { orderId: 'a', amount: 1 },
        { orderId: 'b', amount: 2 },
      ]);
      await consumer.publishMany(
        TYPE,
        [
          { orderId: 'c', total: { amount: 3, currency: 'USD' } },
          { orderId: 'd', total: { amount: 4, currency: 'USD' } },
        ],
        { headers: { tenant: 't' } },
      );
      await consumer.publish(TYPE, { orderId: 'e', total: { amount: 5, currency: 'GBP' } });
      await waitFor(() => seen.length === 5, 10_000, 'the five events');
      expect(seen.map((e) => e.data)).toEqual([
        { orderId: 'a', total: { amount: 1, currency: 'EUR' } },
        { orderId: 'b', total: { amount: 2, currency: 'EUR' } },
        { orderId: 'c', total: { amount: 3, currency: 'USD' } },
        { orderId: 'd', total: { amount: 4, currency: 'USD' } },
        { orderId: 'e', total: { amount: 5, currency: 'GBP' } },
      ]);
      expect(seen.map((e) => e.headers)).toEqual([
        { [VERSION_HEADER]: '2' },
        { [VERSION_HEADER]: '2' },
        { tenant: 't', [VERSION_HEADER]: '2' },
        { tenant: 't', [VERSION_HEADER]: '2' },
        { [VERSION_HEADER]: '2' },
      ]);
      // The older producer writes no version; the newer one writes `dataVersion` and keeps it out of `headers` and `meta`.
      const written = await entries(prefix);
      // The older producer's two events: one batch entry, or two per-event entries.
      const fromOlder = entryMode === 'batch' ? 1 : 2;
      for (const f of written.slice(0, fromOlder)) {
        expect(f['kind']).toBe(entryMode);
        expect(f['dataVersion']).toBeUndefined();
      }
      for (const f of written.slice(fromOlder)) {
        expect(f['dataVersion']).toBe('2');
        expect(f['headers'] ?? '').not.toContain(VERSION_HEADER);
        expect(f['meta'] ?? '').not.toContain(VERSION_HEADER);
      }
      expect(written.map((f) => f['kind'])).toEqual(entryMode === 'batch' ? ['batch', 'batch', 'event'] : ['event', 'event', 'event', 'event', 'event']);
    });
  }

  it('an entry written with plain XADD and no version field is version 1; a bad dataVersion is dead-lettered as malformed', async () => {
    const prefix = uniquePrefix('ver-raw');
    const consumer = await busOf(newer, prefix, 'event');
    const seen: EventEnvelope[] = [];
    await consumer.subscribe(TYPE, { group: 'g', ...fastRead }, (e) => void seen.push(e));
    const key = streamKey(prefix, TYPE, 0);
    await r.raw.xadd(key, '*', 'data', JSON.stringify({ orderId: 'foreign', amount: 7 }));
    await r.raw.xadd(key, '*', 'data', JSON.stringify({ orderId: 'foreign-v2', total: { amount: 8, currency: 'USD' } }), 'dataVersion', '2');
    await r.raw.xadd(key, '*', 'data', JSON.stringify({ orderId: 'bad' }), 'dataVersion', '02');
    await waitFor(async () => seen.length === 2 && (await consumer.deadLetters(TYPE, { group: 'g' })).length === 1, 10_000, 'two events and a dead letter');
    expect(seen.map((e) => e.data)).toEqual([
      { orderId: 'foreign', total: { amount: 7, currency: 'EUR' } },
      { orderId: 'foreign-v2', total: { amount: 8, currency: 'USD' } },
    ]);
    const [dead] = await consumer.deadLetters(TYPE, { group: 'g' });
    expect(dead!.error).toContain('field "dataVersion" is not a positive integer: "02"');
  });
});
