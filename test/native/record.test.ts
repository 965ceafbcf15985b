import { describe, expect, it } from 'vitest';
import type { OutgoingEvent } from '../../src/transport.js';
import { z } from 'zod';
import { compileJsonWriter } from '../../src/json-writer.js';
import { compileSerializer } from '../../src/serializer.js';
import { compileJsonReader, readerPlan, type JsonReader } from '../../src/json-reader.js';
import type { EventEnvelope } from '../../src/envelope.js';
import { IdGenerator } from '../../src/envelope.js';
import { EventMeta, Run } from '../../src/outgoing.js';
import { RECORD_HEADER_BYTES } from '../../transports/native/record.js';
import { VERSION_HEADER } from '../../src/versions.js';
import { encodeEvents, encodeRun } from '../../transports/native/record-encode.js';
import { decodeRecords } from '../../transports/native/record-decode.js';

function ev(i: number, data: unknown, extra: Partial<OutgoingEvent> = {}): OutgoingEvent {
  return {
    id: String(i).padStart(26, '0'),
    type: 't',
    time: 1_700_000_000_000 + i,
    key: undefined,
    data,
    json: undefined,
    partition: 0,
    correlationId: undefined,
    causationId: undefined,
    headers: undefined,
    ...extra,
  };
}

describe('native record encoding', () => {
  it('writes a batch as back-to-back UTF-8 records with exact byte and char lengths, ASCII or not', () => {
    const events = [ev(1, { s: 'plain' }), ev(2, { s: 'é😀日本' }), ev(3, { s: 'x' }, { key: 'ключ' }), ev(4, { s: 'ascii again' })];
    const b = encodeEvents(events);
    expect(b.n).toBe(4);
    const bytes = Buffer.from(b.bytes);
    let off = 0;
    const records: string[] = [];
    for (let i = 0; i < b.n; i++) {
      const rec = bytes.subarray(off, off + b.lens[i]!).toString('utf8');
      expect(rec.length).toBe(b.chars[i]);
      records.push(rec);
      off += b.lens[i]!;
    }
    expect(off).toBe(bytes.length);
    expect(records[0]).toBe(`${events[0]!.id}${events[0]!.time}0{"s":"plain"}`);
    expect(records[1]!.endsWith('{"s":"é😀日本"}')).toBe(true);
    expect(records[2]).toContain('"k":"ключ"');
    expect(records[3]!.endsWith('{"s":"ascii again"}')).toBe(true);
  });

  it('grows its scratch memory when multi-byte text is longer in UTF-8 than the room sized for ASCII', () => {
    // ~3 MB of 3-byte characters: the first write fills the ASCII-sized room and must be redone.
    const text = '日'.repeat(1 << 20);
    const events = [ev(1, { s: 'a' }), ev(2, { s: text }), ev(3, { s: 'b' })];
    const b = encodeEvents(events);
    const bytes = Buffer.from(b.bytes);
    expect(bytes.length).toBe(b.lens[0]! + b.lens[1]! + b.lens[2]!);
    const second = bytes.subarray(b.lens[0]!, b.lens[0]! + b.lens[1]!).toString('utf8');
    expect(second).toBe(`${events[1]!.id}${events[1]!.time}0${JSON.stringify({ s: text })}`);
    expect(
      bytes
        .subarray(b.lens[0]! + b.lens[1]!)
        .toString('utf8')
        .endsWith('{"s":"b"}'),
    ).toBe(true);
  });

  it('writes the same records with the compiled JSON writer as with the string encoder, whatever the text', () => {
    const schema = z.object({ s: z.string(), n: z.number(), tags: z.array(z.string()).optional() });
    const serialize = compileSerializer(schema)!;
    const writer = compileJsonWriter(schema)!;
    const texts = ['plain', 'quote"d', 'é', '😀 wide', 'x'.repeat(5000), 'y'.repeat(40), ''];
    const events = Array.from({ length: 3000 }, (_, i) =>
      ev(
        i,
        { s: texts[i % texts.length]!, n: i % 3 === 0 ? i / 7 : -i, tags: i % 4 === 0 ? [texts[(i + 1) % texts.length]!] : undefined },
        i % 11 === 0 ? { key: `k${i}` } : i % 13 === 0 ? { id: 'short-id' } : {},
      ),
    );
    const copy = (b: ReturnType<typeof encodeEvents>) => ({ bytes: Buffer.from(b.bytes), lens: Array.from(b.lens.subarray(0, b.n)), chars: Array.from(b.chars.subarray(0, b.n)) });
    const viaText = copy(encodeEvents(events, serialize));
    const viaWriter = copy(encodeEvents(events, serialize, writer));
    expect(viaWriter.lens).toEqual(viaText.lens);
    expect(viaWriter.chars).toEqual(viaText.chars);
    expect(viaWriter.bytes.equals(viaText.bytes)).toBe(true);
  });

  it('writes a run (publishMany) as the records of its events, whatever the text, ids and options', () => {
    const schema = z.object({ s: z.string(), n: z.number() });
    const serialize = compileSerializer(schema)!;
    const writer = compileJsonWriter(schema)!;
    const texts = ['plain', 'quote"d', 'é', '😀 wide', 'x'.repeat(5000), ''];
    const values = Array.from({ length: 2500 }, (_, i) => ({ s: texts[i % texts.length]!, n: i % 3 === 0 ? i / 7 : -i }));
    const jsons = values.map((v, i) => (i % 17 === 0 ? serialize(v) : undefined));
    const copy = (b: ReturnType<typeof encodeEvents>) => ({ bytes: Buffer.from(b.bytes), lens: Array.from(b.lens.subarray(0, b.n)), chars: Array.from(b.chars.subarray(0, b.n)) });
    const cases: [string, EventMeta, string | undefined, (string | undefined)[] | undefined, string | undefined][] = [
      ['plain', new EventMeta('t', 1_700_000_000_000, undefined), undefined, undefined, undefined],
      ['encoded at publish', new EventMeta('t', 1_700_000_000_000, undefined), undefined, jsons, undefined],
      ['key and options', new EventMeta('t', 1_700_000_000_000, { correlationId: 'c', headers: { a: 'b' } }), 'k', undefined, undefined],
      ['another service', new EventMeta('t', 1_700_000_000_000, undefined), undefined, undefined, 'other'],
      ['a time outside the header', new EventMeta('t', 5, undefined), undefined, undefined, undefined],
    ];
    for (const [what, meta, key, js, source] of cases) {
      const g = new IdGenerator();
      (g as unknown as { seq: number }).seq = 1_047_000; // crosses 2^10 and 2^20 sequence boundaries
      const run = new Run(meta, key, 0, g.idPrefix, g.reserve(meta.time, values.length), values, js, undefined);
      const viaRun = copy(encodeRun(run, serialize, writer, source));
      const viaEvents = copy(encodeEvents(run.events(), serialize, writer, source));
      expect(viaRun.lens, what).toEqual(viaEvents.lens);
      expect(viaRun.chars, what).toEqual(viaEvents.chars);
      expect(viaRun.bytes.equals(viaEvents.bytes), what).toBe(true);
    }
  });

  it('writes a run of bytes (payloads written at publish) as the records of its values, headers in the room before each', () => {
    const schema = z.object({ s: z.string(), n: z.number() });
    const serialize = compileSerializer(schema)!;
    const writer = compileJsonWriter(schema)!;
    const values = Array.from({ length: 3000 }, (_, i) => ({ s: 'x'.repeat(i % 50), n: i % 3 === 0 ? i / 7 : -i }));
    const room = RECORD_HEADER_BYTES;
    const buffer = Buffer.alloc(3000 * 200, 0x3f); // '?' where nothing was written
    const ends = new Uint32Array(values.length);
    const start = 100; // a run that is not the first of its call
    for (let i = 0, o = start; i < values.length; i++) o = ends[i] = writer(values[i], buffer, o + room);
    const copy = (b: ReturnType<typeof encodeEvents>) => ({ bytes: Buffer.from(b.bytes), lens: Array.from(b.lens.subarray(0, b.n)), chars: Array.from(b.chars.subarray(0, b.n)) });
    const meta = new EventMeta('t', 1_700_000_000_000, undefined);
    const g = new IdGenerator();
    (g as unknown as { seq: number }).seq = 1_047_000; // crosses 2^10 and 2^20 sequence boundaries
    const first = g.reserve(meta.time, values.length);
    const bytesRun = new Run(meta, undefined, 0, g.idPrefix, first, undefined, undefined, { buffer, start, ends, room });
    const valuesRun = new Run(meta, undefined, 0, g.idPrefix, first, values, undefined, undefined);
    const viaValues = copy(encodeRun(valuesRun, serialize, writer));
    const viaBytes = encodeRun(bytesRun, serialize, writer);
    expect(viaBytes.bytes.buffer).toBe(buffer.buffer); // in place, no copy
    const got = copy(viaBytes);
    expect(got.lens).toEqual(viaValues.lens);
    expect(got.chars).toEqual(viaValues.chars);
    expect(got.bytes.equals(viaValues.bytes)).toBe(true);
    expect(bytesRun.values).toEqual(values); // decoded when asked for
    // A slice (the batcher splits runs) is the records of its events.
    const part = bytesRun.slice(1000, 2000);
    expect(copy(encodeRun(part, serialize, writer)).bytes.equals(copy(encodeRun(valuesRun.slice(1000, 2000), serialize, writer)).bytes)).toBe(true);
    // Another service's records carry extras: written again from the decoded values.
    const other = copy(encodeRun(bytesRun, serialize, writer, 'other'));
    expect(other.bytes.equals(copy(encodeRun(valuesRun, serialize, writer, 'other')).bytes)).toBe(true);
  });

  it('decodes payloads with the reader it is given, in place in the batch text, eagerly or on first access', () => {
    const schema = z.object({ s: z.string(), n: z.number() });
    const events = [ev(1, { s: 'a', n: 1.5 }), ev(2, { s: 'é😀', n: -2.25 }, { key: 'k' }), ev(3, { s: 'c', n: 3 }, { id: 'not-26-units', time: -5 })];
    const b = encodeEvents(events);
    const text = Buffer.from(b.bytes).toString('utf8');
    const offs = new Uint32Array(b.n + 1);
    for (let i = 0; i < b.n; i++) offs[i + 1] = offs[i]! + b.chars[i]!;
    const compiled = compileJsonReader(readerPlan(schema)!)!;
    for (const lazy of [false, true]) {
      const calls: string[] = [];
      const read: JsonReader = (t, a, e) => {
        expect(t).toBe(text); // the batch text itself, not a copy of the record
        calls.push(t.slice(a, e));
        return compiled(t, a, e);
      };
      const out: EventEnvelope[] = [];
      decodeRecords(text, offs, b.n, 't', 'src', lazy, read, out);
      expect(calls.length).toBe(lazy ? 0 : 3);
      expect(out.map((e) => e.data)).toEqual(events.map((e) => e.data));
      expect(out[1]!.key).toBe('k');
      expect(out.map((e) => [e.id, e.time, e.type, e.source])).toEqual(events.map((e) => [e.id, e.time, 't', 'src']));
      expect(calls).toEqual(events.map((e) => JSON.stringify(e.data)));
    }
  });

  it("carries the publishing service when it is not the broker's, with or without the compiled writer, eagerly or lazily", () => {
    const schema = z.object({ n: z.number() });
    const events = [ev(1, { n: 1 }), ev(2, { n: 2 }, { key: 'k' })];
    const writer = compileJsonWriter(schema)!;
    for (const b of [encodeEvents(events, JSON.stringify, writer, 'other'), encodeEvents(events, JSON.stringify, undefined, 'other')]) {
      const text = Buffer.from(b.bytes).toString('utf8');
      const offs = new Uint32Array(b.n + 1);
      for (let i = 0; i < b.n; i++) offs[i + 1] = offs[i]! + b.chars[i]!;
      for (const lazy of [false, true]) {
        const out: EventEnvelope[] = [];
        decodeRecords(text, offs, b.n, 't', 'broker-service', lazy, compileJsonReader(readerPlan(schema)!)!, out);
        expect(out.map((e) => [e.id, e.source, e.key, e.data])).toEqual([
          [events[0]!.id, 'other', undefined, { n: 1 }],
          [events[1]!.id, 'other', 'k', { n: 2 }],
        ]);
      }
    }
  });

  it("carries a payload's version in a plain record's flag (2..58) and in the extras otherwise, on every path, eagerly or lazily", () => {
    const schema = z.object({ s: z.string(), n: z.number() });
    const serialize = compileSerializer(schema)!;
    const writer = compileJsonWriter(schema)!;
    const parse: JsonReader = (t, a, e) => JSON.parse(t.slice(a, e));
    const v2 = { [VERSION_HEADER]: '2' };
    const headers = [v2, v2, { [VERSION_HEADER]: '58' }, { [VERSION_HEADER]: '59' }, { [VERSION_HEADER]: '2', tenant: 't' }, undefined];
    const events = headers.map((h, i) => ev(i, { s: `e${i}`, n: i }, { headers: h }));
    const records = (b: ReturnType<typeof encodeEvents>) => {
      const text = Buffer.from(b.bytes).toString('utf8');
      const offs = new Uint32Array(b.n + 1);
      for (let i = 0; i < b.n; i++) offs[i + 1] = offs[i]! + b.chars[i]!;
      return { text, offs, flags: Array.from({ length: b.n }, (_, i) => text[offs[i]! + RECORD_HEADER_BYTES - 1]) };
    };
    const viaWriter = records(encodeEvents(events, serialize, writer));
    const viaText = records(encodeEvents(events, serialize));
    expect(viaWriter.text).toBe(viaText.text);
    expect(viaWriter.flags).toEqual(['B', 'B', 'z', '1', '1', '0']);
    for (const lazy of [false, true]) {
      const out: EventEnvelope[] = [];
      decodeRecords(viaWriter.text, viaWriter.offs, events.length, 't', 'src', lazy, parse, out);
      expect(out.map((e) => e.headers)).toEqual(headers);
      expect(out.map((e) => e.data)).toEqual(events.map((e) => e.data));
    }
    // A run of a versioned type: from its values, from its bytes, and as its events, the same records.
    const values = Array.from({ length: 1500 }, (_, i) => ({ s: `r${i}`, n: i }));
    const meta = new EventMeta('t', 1_700_000_000_000, undefined, '3');
    const g = new IdGenerator();
    const first = g.reserve(meta.time, values.length);
    const room = RECORD_HEADER_BYTES;
    const buffer = Buffer.alloc(values.length * 100);
    const ends = new Uint32Array(values.length);
    for (let i = 0, o = 0; i < values.length; i++) o = ends[i] = writer(values[i], buffer, o + room);
    const valuesRun = new Run(meta, undefined, 0, g.idPrefix, first, values, undefined, undefined);
    const fromValues = records(encodeRun(valuesRun, serialize, writer));
    const fromEvents = records(encodeEvents(valuesRun.events(), serialize, writer));
    const fromBytes = records(encodeRun(new Run(meta, undefined, 0, g.idPrefix, first, undefined, undefined, { buffer, start: 0, ends, room }), serialize, writer));
    expect(fromValues.text).toBe(fromEvents.text);
    expect(fromBytes.text).toBe(fromEvents.text);
    expect(new Set(fromBytes.flags)).toEqual(new Set(['C']));
    const out: EventEnvelope[] = [];
    decodeRecords(fromBytes.text, fromBytes.offs, values.length, 't', 'src', true, parse, out);
    expect(out.map((e) => e.headers?.[VERSION_HEADER])).toEqual(values.map(() => '3'));
    expect(out.map((e) => e.data)).toEqual(values);
  });
});
