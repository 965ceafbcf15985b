import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { compileJsonWriter } from '../../src/json-writer.js';
import { IdGenerator, type EventEnvelope } from '../../src/envelope.js';
import { EventMeta, Run } from '../../src/outgoing.js';
import { compileSerializer } from '../../src/serializer.js';
import type { OutgoingEvent } from '../../src/transport.js';
import { BatchEncoder, pushEventFields } from './codec.js';
import { decodeEntry, Malformed } from './decode-entry.js';
import { encodeCommand } from './wire-command.js';

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

/** The arguments of a RESP request (`*n` then n bulk strings); throws unless the bytes are exactly that. */
function parseRequest(buf: Buffer): string[] {
  let off = 0;
  const line = (prefix: string): number => {
    expect(String.fromCharCode(buf[off]!)).toBe(prefix);
    const end = buf.indexOf('\r\n', off, 'latin1');
    const n = Number(buf.toString('latin1', off + 1, end));
    expect(String(n)).toBe(buf.toString('latin1', off + 1, end)); // no padding, no sign
    off = end + 2;
    return n;
  };
  const out: string[] = [];
  for (let k = line('*'); k > 0; k--) {
    const len = line('$');
    out.push(buf.toString('utf8', off, off + len));
    expect(buf.toString('latin1', off + len, off + len + 2)).toBe('\r\n');
    off += len + 2;
  }
  expect(off).toBe(buf.length);
  return out;
}

/** The entry fields of a batch XADD request made with head `key *`. */
function entryFields(request: Buffer): string[] {
  const args = parseRequest(request);
  expect(args.slice(0, 3)).toEqual(['xadd', 'k', '*']);
  // The special-purpose builder writes exactly what the generic encoder writes for the same arguments.
  expect(request.equals(encodeCommand('xadd', args.slice(1)))).toBe(true);
  return args.slice(3);
}

describe('redis-streams codec', () => {
  it('batch entries round-trip: payloads, ids, time runs, meta, non-ASCII', () => {
    const events = Array.from({ length: 95 }, (_, i) => ev(i, i === 5 ? { key: 'k-ü', correlationId: 'c', causationId: 'd', headers: { traceparent: 'tp' } } : {}));
    const unencoded = events.map((e) => ({ ...e, json: undefined }));
    for (const [batch, bytes] of [
      [events, 0],
      [events, events.reduce((n, e) => n + e.json!.length, 0)],
      [unencoded, 0], // encoded at write time by the serializer
    ] as const) {
      const fields = entryFields(new BatchEncoder().request(['k', '*'], 'order.created', 'svc', batch, bytes, (d) => JSON.stringify(d)));
      expect(fields.filter((_, i) => i % 2 === 0)).toEqual(['v', 'kind', 'type', 'source', 'count', 'idw', 'ids', 'times', 'meta', 'payloads']); // docs/wire-format.md order
      const d = decodeEntry('1-0', fields, 'order.created');
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
      const fields = entryFields(new BatchEncoder().request(['k', '*'], 'order.created', 'svc', events, bytes, (d) => JSON.stringify(d), writer));
      expect(fields[fields.indexOf('payloads') + 1]).toBe(JSON.stringify(events.map((e) => e.data)));
    }
  });

  it('frames payloads of every length exactly, whatever the size estimate', () => {
    const schema = z.object({ i: z.number(), text: z.string() });
    const writer = compileJsonWriter(schema)!;
    for (const len of [0, 1, 5, 50, 500, 5_000, 50_000]) {
      for (const n of [1, 2, 3]) {
        const events = Array.from({ length: n }, (_, i) => ({ ...ev(i), json: undefined, data: { i, text: 'x'.repeat(len) } }));
        for (const bytes of [0, 1, n * (len + 20), 10_000_000]) {
          const fields = entryFields(new BatchEncoder().request(['k', '*'], 't', 's', events, bytes, JSON.stringify, writer));
          expect(fields.at(-1)).toBe(JSON.stringify(events.map((e) => e.data)));
        }
      }
    }
  });

  it('a run (publishMany) is encoded as the same request as its events, and decodes to them', () => {
    const schema = z.object({ i: z.number(), text: z.string() });
    const serialize = compileSerializer(schema)!;
    const writer = compileJsonWriter(schema)!;
    const values = Array.from({ length: 1500 }, (_, i) => ({ i: i * 1.5, text: i % 3 === 0 ? 'héllo ✓ 😀' : 'p'.repeat(i % 50) }));
    const jsons = values.map((v, i) => (i % 7 === 0 ? serialize(v) : undefined));
    const cases: [EventMeta, string | undefined, (string | undefined)[] | undefined][] = [
      [new EventMeta('order.created', 1_700_000_000_000, undefined), undefined, undefined],
      [new EventMeta('order.created', 1_700_000_000_000, undefined), undefined, jsons],
      [new EventMeta('order.created', 1_700_000_000_000, { correlationId: 'c', causationId: 'x', headers: { a: 'b' } }), 'k', undefined],
    ];
    for (const [meta, key, js] of cases) {
      const g = new IdGenerator();
      (g as unknown as { seq: number }).seq = 1_048_000; // crosses 2^10 and 2^20 sequence boundaries
      const run = new Run(meta, key, 0, g.idPrefix, g.reserve(meta.time, values.length), values, js, undefined);
      for (const bytes of [1, 100_000]) {
        const viaRun = new BatchEncoder().requestRun(['k', '*'], 'order.created', 'svc', run, bytes, serialize, writer);
        const viaEvents = new BatchEncoder().request(['k', '*'], 'order.created', 'svc', run.events(), bytes, serialize, writer);
        expect(viaRun.equals(viaEvents)).toBe(true);
      }
      const d = decodeEntry('1-0', entryFields(new BatchEncoder().requestRun(['k', '*'], 'order.created', 'svc', run, 0, serialize, writer)), 'order.created') as { events: EventEnvelope[] };
      expect(d.events.map((e) => [e.id, e.time, e.key, e.correlationId, e.headers, e.data])).toEqual(run.events().map((e) => [e.id, e.time, e.key, e.correlationId, e.headers, e.data]));
    }
  });

  it('ids of other widths are stored as a JSON array', () => {
    const fields = entryFields(new BatchEncoder().request(['k', '*'], 't', 's', [ev(1, { id: 'a' }), ev(2, { id: 'bb' })], 0, JSON.stringify));
    const d = decodeEntry('1-0', fields, 't') as { events: { id: string }[] };
    expect(d.events.map((e) => e.id)).toEqual(['a', 'bb']);
  });

  it('per-event entries round-trip and foreign entries get defaults', () => {
    const out: (string | number)[] = [];
    pushEventFields(out, ev(3, { key: 'k', headers: { a: 'b' } }), 'svc');
    const d = decodeEntry('5-0', asStrings(out), 'order.created') as unknown as { events: Record<string, unknown>[] };
    expect(d.events[0]).toMatchObject({ id: ev(3).id, type: 'order.created', source: 'svc', key: 'k', headers: { a: 'b' }, data: ev(3).data });
    const foreign = decodeEntry('1700000000123-4', ['data', '{"x":1}'], 'orders') as unknown as { events: Record<string, unknown>[] };
    expect(foreign.events[0]).toEqual({ id: '1700000000123-4', type: 'orders', source: '', time: 1700000000123, data: { x: 1 } });
  });

  it("reads attempt and due only in a retry stream: in a partition stream they are another producer's fields", () => {
    const fields = ['v', '1', 'kind', 'event', 'attempt', '7', 'due', '99999999999999', 'data', '1'];
    expect(decodeEntry('1-0', fields, 't')).toMatchObject({ attempt: 1, due: 0 });
    expect(decodeEntry('1-0', fields, 't', undefined, true)).toMatchObject({ attempt: 7, due: 99999999999999 });
    // Its own meaning of "attempt" does not make a foreign entry malformed.
    expect(decodeEntry('1-0', ['attempt', 'first', 'data', '1'], 't')).toMatchObject({ attempt: 1 });
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
    expect((decodeEntry('1-0', ['v', '1', 'kind', 'event', 'attempt', '0', 'data', '1'], 't', undefined, true) as Malformed).reason).toContain('attempt');
    // Publish times: run counts must add up to the events, each run a time and a count of at least 1.
    const batch = (times: string) => reason(['v', '1', 'kind', 'batch', 'idw', '1', 'ids', 'ab', 'times', times, 'payloads', '[1,2]']);
    expect(batch('[]')).toContain('"times" counts 0 events but "payloads" holds 2');
    expect(batch('[5,1]')).toContain('"times" counts 1 events');
    expect(batch('[5,3]')).toContain('"times" counts 3 events');
    expect(batch('[5,0,6,2]')).toContain('bad run [5, 0]');
    expect(batch('["x",2]')).toContain('bad run ["x", 2]');
    expect(batch('[5,1.5,6,0.5]')).toContain('bad run [5, 1.5]');
    expect(decodeEntry('1-0', ['v', '1', 'kind', 'batch', 'idw', '1', 'ids', 'ab', 'times', '[5,1,6,1]', 'payloads', '[1,2]'], 't')).not.toBeInstanceOf(Malformed);
    expect(reason(['v', '1', 'kind', 'event', 'time', 'soon', 'data', '1'])).toContain('field "time" is not a time in ms: "soon"');
    // Number() would read these as 0, 16 and 5.
    for (const time of ['', '0x10', ' 5']) expect(reason(['time', time, 'data', '1'])).toContain(`field "time" is not a time in ms: "${time}"`);
    expect(decodeEntry('1-0', ['time', '1700000000123', 'data', '1'], 't')).toMatchObject({ events: [{ time: 1700000000123 }] });
    expect(reason(['id', '', 'data', '1'])).toContain('field "id" is empty');
    // A stream holds one type: an entry naming another (per-event or batch) is not delivered as this one.
    expect(reason(['type', 'note.added', 'data', '1'])).toContain('field "type" is "note.added", not the stream\'s type "t"');
    expect(reason(['v', '1', 'kind', 'batch', 'type', 'u', 'idw', '1', 'ids', 'ab', 'times', '[5,2]', 'payloads', '[1,2]'])).toContain('field "type" is "u"');
    expect(reason(['v', '1', 'kind', 'event', 'headers', '["a"]', 'data', '1'])).toContain('"headers" is not a JSON object of strings');
    expect(reason(['v', '1', 'kind', 'event', 'headers', '{"a":1}', 'data', '1'])).toContain('"headers" is not a JSON object of strings');
    expect(reason(['v', '1', 'kind', 'event', 'headers', '{', 'data', '1'])).toContain('"headers" is not JSON');
    // A batch entry's meta is checked as a per-event entry's fields are.
    const meta = (m: string) => reason(['v', '1', 'kind', 'batch', 'idw', '1', 'ids', 'ab', 'times', '[5,2]', 'payloads', '[1,2]', 'meta', m]);
    expect(meta('[]')).toContain('"meta" is not a JSON object');
    expect(meta('{"2":{"key":"k"}}')).toContain('names event "2", not an index of the 2 payloads');
    expect(meta('{"x":{}}')).toContain('names event "x"');
    expect(meta('{"01":{}}')).toContain('names event "01"');
    expect(meta('{"0":"k"}')).toContain('meta" of event 0 is not a JSON object');
    expect(meta('{"1":{"key":5}}')).toContain('event 1: "key" is not a string');
    expect(meta('{"1":{"correlationId":null}}')).toContain('"correlationId" is not a string');
    expect(meta('{"1":{"headers":{"a":1}}}')).toContain('"headers" is not a JSON object of strings');
    const ok = decodeEntry('1-0', ['v', '1', 'kind', 'batch', 'idw', '1', 'ids', 'ab', 'times', '[5,2]', 'payloads', '[1,2]', 'meta', '{"1":{"key":"k","headers":{"a":"b"}}}'], 't');
    expect((ok as Exclude<typeof ok, Malformed>).events[1]).toMatchObject({ key: 'k', headers: { a: 'b' } });
    expect(reason(['v', '1', 'kind', 'batch', 'ids', '[1,2]', 'times', '[5,2]', 'payloads', '[1,2]'])).toContain('"ids" is not a JSON array of 2 string ids');
  });
});
