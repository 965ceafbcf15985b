import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { compileJsonWriter } from '../../src/json-writer.js';
import type { OutgoingEvent } from '../../src/transport.js';
import { BatchEncoder, decodeEntry, Malformed, pushEventFields } from './codec.js';

function ev(i: number, extra: Partial<OutgoingEvent> = {}): OutgoingEvent {
  const data = { i, text: i % 3 === 0 ? 'héllo ✓ 😀' : 'plain' };
  return {
    id: `01KAKSB2F0Q3YV7Z${String(i).padStart(10, '0')}`,
    type: 'order.created',
    time: 1_700_000_000_000 + Math.floor(i / 10),
    key: undefined,
    data,
    json: JSON.stringify(data),
    partition: 0,
    correlationId: undefined,
    causationId: undefined,
    headers: undefined,
    ...extra,
  };
}

const asStrings = (out: unknown[]) => out.map((v) => (Buffer.isBuffer(v) ? v.toString('utf8') : String(v)));

describe('redis-streams codec', () => {
  it('batch entries round-trip: payloads, ids, time runs, meta, non-ASCII', () => {
    const events = Array.from({ length: 95 }, (_, i) =>
      ev(i, i === 5 ? { key: 'k-ü', correlationId: 'c', causationId: 'd', headers: { traceparent: 'tp' } } : {}),
    );
    const unencoded = events.map((e) => ({ ...e, json: undefined }));
    for (const [batch, bytes] of [
      [events, 0],
      [events, events.reduce((n, e) => n + e.json!.length, 0)],
      [unencoded, 0], // encoded at write time by the serializer
    ] as const) {
      const out: unknown[] = [];
      new BatchEncoder().push(out, 'order.created', 'svc', batch, bytes, (d) => JSON.stringify(d));
      const d = decodeEntry('1-0', asStrings(out), 'x');
      expect(d).not.toBeInstanceOf(Malformed);
      const got = (d as Exclude<typeof d, Malformed>).events;
      expect(got).toHaveLength(95);
      got.forEach((g, i) => {
        expect(g).toMatchObject({ id: events[i]!.id, type: 'order.created', source: 'svc', time: events[i]!.time, data: events[i]!.data });
      });
      expect(got[5]).toMatchObject({ key: 'k-ü', correlationId: 'c', causationId: 'd', headers: { traceparent: 'tp' } });
      expect(got[6]!.key).toBeUndefined();
    }
  });

  it('payloads written by the compiled JSON writer are byte for byte what JSON.stringify writes', () => {
    const schema = z.object({ i: z.number(), text: z.string() });
    const writer = compileJsonWriter(schema)!;
    // Non-ASCII payloads go through the string encoder; an estimate of 1 byte makes the buffer grow.
    const events = Array.from({ length: 500 }, (_, i) => ({ ...ev(i), json: undefined, data: { i: i * 1.5, text: i % 3 === 0 ? 'héllo ✓ 😀' : 'p'.repeat(i % 50) } }));
    for (const bytes of [1, 100_000]) {
      const out: unknown[] = [];
      new BatchEncoder().push(out, 'order.created', 'svc', events, bytes, (d) => JSON.stringify(d), writer);
      const payloads = out[out.indexOf('payloads') + 1];
      expect(Buffer.isBuffer(payloads)).toBe(true);
      expect((payloads as Buffer).toString('utf8')).toBe(JSON.stringify(events.map((e) => e.data)));
    }
  });

  it('ids of other widths are stored as a JSON array', () => {
    const out: unknown[] = [];
    new BatchEncoder().push(out, 't', 's', [ev(1, { id: 'a' }), ev(2, { id: 'bb' })], 0, JSON.stringify);
    const d = decodeEntry('1-0', asStrings(out), 't') as { events: { id: string }[] };
    expect(d.events.map((e) => e.id)).toEqual(['a', 'bb']);
  });

  it('per-event entries round-trip and foreign entries get defaults', () => {
    const out: (string | number)[] = [];
    pushEventFields(out, ev(3, { key: 'k', headers: { a: 'b' } }), 'svc');
    const d = decodeEntry('5-0', asStrings(out), 'x') as unknown as { events: Record<string, unknown>[] };
    expect(d.events[0]).toMatchObject({ id: ev(3).id, type: 'order.created', source: 'svc', key: 'k', headers: { a: 'b' }, data: ev(3).data });
    const foreign = decodeEntry('1700000000123-4', ['data', '{"x":1}'], 'orders') as unknown as { events: Record<string, unknown>[] };
    expect(foreign.events[0]).toEqual({ id: '1700000000123-4', type: 'orders', source: '', time: 1700000000123, data: { x: 1 } });
  });

  it('malformed entries report a reason', () => {
    const reason = (fields: string[]) => (decodeEntry('1-0', fields, 't') as Malformed).reason;
    expect(reason(['foo', 'bar'])).toContain('no field "data"');
    expect(reason(['data', '{'])).toContain('"data" is not JSON');
    expect(reason(['v', '2', 'data', '{}'])).toContain('unsupported wire version');
    expect(reason(['v', '1', 'kind', 'weird', 'data', '{}'])).toContain('unknown entry kind');
    expect(reason(['v', '1', 'kind', 'batch', 'ids', '', 'times', '[]', 'payloads', '{}'])).toContain('not a JSON array');
    expect(reason(['v', '1', 'kind', 'batch', 'count', '3', 'ids', '', 'times', '[]', 'payloads', '[1]'])).toContain('"count" says 3');
    expect(reason(['v', '1', 'kind', 'batch', 'idw', '26', 'ids', 'abc', 'times', '[1,1]', 'payloads', '[1]'])).toContain('"ids" has 3 chars');
    expect(reason(['v', '1', 'kind', 'event', 'attempt', '0', 'data', '1'])).toContain('attempt');
  });
});
