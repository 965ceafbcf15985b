/**
 * Record codec of the native transport. A record is a fixed header and the bus's payload JSON, reused:
 *
 *   <id: 26 chars><time: 13 digits><flag>[<extras JSON>\n]<payload JSON>
 *
 * `flag` is '0', or '1' when an extras object (key, correlation/causation ids, headers, a source other than the
 * broker's) follows; JSON never
 * contains a raw newline, so '\n' ends it. Records are split with the offsets the core returns from `pop`,
 * so framing is read without parsing; worker consumers decode the payload lazily, on first `event.data`.
 */
import type { EventEnvelope, EventHeaders } from '../../src/envelope.js';
import type { EventRun, OutgoingEvent, RunBytes } from '../../src/transport.js';
import { idHeadAt, idTail } from '../../src/envelope.js';
import { ID_BYTES, runIdHead, TAIL_BYTES, writeHeadId, writeId } from '../../src/outgoing.js';
import { NEEDS_STRING, NO_ROOM, type DirectBuffer, type JsonWriter } from '../../src/json-writer.js';
import type { JsonReader } from '../../src/json-reader.js';

/**
 * A batch of records ready for `PartitionCore.push`: UTF-8 bytes back to back, with each record's byte and
 * UTF-16 lengths. `encodeEvents` returns views of reused scratch memory (`encodeRun` of a run's bytes: of
 * those bytes and the reused length arrays), valid until the next call; `copyBatch` makes one that can be kept.
 */
export interface EncodedBatch {
  bytes: Uint8Array;
  lens: Uint32Array;
  chars: Uint32Array;
  n: number;
}

interface Extras {
  k?: string;
  c?: string;
  x?: string;
  h?: EventHeaders;
  /** id or time that does not fit the fixed header */
  i?: string;
  /** the publishing bus's service, when it is not the one that opened the broker */
  s?: string;
  t?: number;
}

const ID_LEN = ID_BYTES; // the header holds a bus id as it is
const HEADER = ID_LEN + 13 + 1;
/** Bytes of a plain record before its payload (id, time, flag): the room asked for runs written as bytes (`runBytes`). */
export const RECORD_HEADER_BYTES = HEADER;
const NO_ID = ' '.repeat(ID_LEN);
let scratch = Buffer.allocUnsafeSlow(1 << 20) as DirectBuffer;
/** `scratch` as a DataView: headers are copied four bytes at a time. */
let scratchView = viewOf(scratch);

function viewOf(b: Buffer): DataView {
  return new DataView(b.buffer, b.byteOffset, b.byteLength);
}

function setScratch(b: Buffer): void {
  scratch = b as DirectBuffer;
  scratchView = viewOf(b);
}
let lensBuf = new Uint32Array(4096);
let charsBuf = new Uint32Array(4096);

/** Grows the reused length arrays to hold `n` records. */
function roomForLengths(n: number): void {
  if (lensBuf.length < n) {
    lensBuf = new Uint32Array(Math.max(n, lensBuf.length * 2));
    charsBuf = new Uint32Array(lensBuf.length);
  }
}

/**
 * Encodes a unit's events as records. With the type's compiled JSON writer (`writer`), records are written
 * as bytes straight into the scratch memory; events it declines (text to escape or not ASCII, extras) are
 * encoded as strings. Without one, every record is a string and all are written with one `utf8Write`.
 */
export function encodeEvents(
  events: readonly OutgoingEvent[],
  serialize: (data: unknown) => string = JSON.stringify,
  writer?: JsonWriter,
  /** The publishing service, written into every record; undefined for the broker's own. */
  source?: string,
): EncodedBatch {
  const n = events.length;
  roomForLengths(n);
  if (writer !== undefined && source === undefined) return writeRecords(events, serialize, writer);
  const lens = lensBuf;
  const chars = charsBuf;
  // All records as one string, written with one utf8Write: a native call per record costs more than
  // the record. When every byte is ASCII (written bytes = chars) the byte lengths are the char lengths.
  let all = '';
  for (let i = 0; i < n; i++) {
    const ev = events[i]!;
    const json = ev.json ?? serialize(ev.data);
    const rec = encodeEvent(ev, json, source);
    chars[i] = rec.length;
    all += rec;
  }
  // Room for the text as ASCII (the common case) and one write; no separate byte-length pass. A write
  // that (nearly) fills the scratch may have stopped early (multi-byte text): then measure and redo.
  if (scratch.length < all.length + 4) setScratch(Buffer.allocUnsafeSlow(Math.max(scratch.length * 2, all.length + 4)));
  let written = scratch.utf8Write(all, 0);
  if (written + 4 > scratch.length) {
    const size = Buffer.byteLength(all);
    if (size > written) {
      setScratch(Buffer.allocUnsafeSlow(Math.max(scratch.length * 2, size + 4)));
      written = scratch.utf8Write(all, 0);
    }
  }
  if (written === all.length) {
    lens.set(chars.subarray(0, n));
  } else {
    // Some record holds multi-byte characters: byte lengths record by record.
    for (let i = 0, c = 0; i < n; i++) {
      lens[i] = Buffer.byteLength(all.slice(c, c + chars[i]!));
      c += chars[i]!;
    }
  }
  return { bytes: scratch.subarray(0, written), lens, chars, n };
}

let lastTime = -1;
let lastTimeText = '';
/** `lastTimeText` as bytes (when it is not ''), followed by the '0' flag. */
const lastTimeBytes = new Uint8Array(16);
lastTimeBytes[13] = 0x30;
const lastTimeWords = new DataView(lastTimeBytes.buffer);

/** A publish time's 13 digits for the fixed header, or '' when it does not fit there (cached: a unit's events mostly share one). */
function timeText(t: number): string {
  if (t !== lastTime) {
    lastTime = t;
    lastTimeText = Number.isInteger(t) && t >= 1e12 && t < 1e13 ? String(t) : '';
    for (let k = 0; k < lastTimeText.length; k++) lastTimeBytes[k] = lastTimeText.charCodeAt(k);
  }
  return lastTimeText;
}

/** Grows the scratch memory to hold `need` bytes, keeping its first `keep` bytes. */
function growScratch(need: number, keep: number): void {
  const next = Buffer.allocUnsafeSlow(Math.max(scratch.length * 2, need)) as DirectBuffer;
  scratch.copy(next, 0, 0, keep);
  setScratch(next);
}

/** Writes `rec` (any text) at `o`, growing the scratch memory as needed; returns the bytes written. */
function writeText(rec: string, o: number): number {
  if (o + rec.length * 3 > scratch.length) {
    const bytes = Buffer.byteLength(rec);
    if (o + bytes > scratch.length) growScratch(o + bytes + 65_536, o);
  }
  return scratch.utf8Write(rec, o);
}

/** Writes record `i` as text at `start` (`writeText`) and notes its lengths; returns the offset after it. */
function textRecord(rec: string, start: number, i: number): number {
  const bytes = writeText(rec, start);
  lensBuf[i] = bytes;
  charsBuf[i] = rec.length;
  return start + bytes;
}

/** `encodeEvents` with a compiled JSON writer: plain records as bytes, the others as text. */
function writeRecords(events: readonly OutgoingEvent[], serialize: (data: unknown) => string, writer: JsonWriter): EncodedBatch {
  const n = events.length;
  const lens = lensBuf;
  const chars = charsBuf;
  let o = 0;
  for (let i = 0; i < n; i++) {
    const ev = events[i]!;
    const start = o;
    // The fixed header and the payload as bytes; extras, an unusual id or time, or an encoded payload take the text path.
    const end = ev.json === undefined && plainExtras(ev) ? plainRecord(ev, '', 0, ev.data, writer, start) : NEEDS_STRING;
    o = end >= 0 ? bytesRecord(i, start, end) : textRecord(encodeEvent(ev, ev.json ?? serialize(ev.data)), start, i);
  }
  return { bytes: scratch.subarray(0, o), lens, chars, n };
}

/**
 * A record of the fixed header and the payload written by `writer`, as bytes at `start`: of `ev`, or (`ev`
 * undefined) of the run event whose id is `head + idTail(low)`, with the time of the last `timeText`. Grows the
 * scratch memory as needed. Returns the end, or NEEDS_STRING when the id or the payload must be written as text.
 */
function plainRecord(ev: OutgoingEvent | undefined, head: string, low: number, data: unknown, writer: JsonWriter, start: number): number {
  for (;;) {
    let end: number = NO_ROOM;
    if (start + HEADER <= scratch.length) {
      const id = ev !== undefined ? writeId(ev, scratch, scratchView, start) : writeHeadId(head, low, scratch, scratchView, start);
      end = id ? writer(data, scratch, writeTime(scratchView, start + ID_LEN)) : NEEDS_STRING;
    }
    if (end !== NO_ROOM) return end;
    growScratch(scratch.length * 2, start);
  }
}

/** Notes the lengths of record `i`, written as bytes from `start` to `end`; returns `end`. */
function bytesRecord(i: number, start: number, end: number): number {
  lensBuf[i] = charsBuf[i] = end - start; // ASCII: bytes = UTF-16 units
  return end;
}

/**
 * `encodeEvents` for a run (`PublishUnit.run`): the same records, written from the run's columns. A run
 * with extras (key, options, a source) or no compiled writer goes through its events.
 */
export function encodeRun(run: EventRun, serialize: (data: unknown) => string, writer?: JsonWriter, source?: string): EncodedBatch {
  const plain = source === undefined && plainRun(run);
  const b = run.bytes;
  if (plain && b !== undefined && b.room === HEADER) {
    const batch = headRecords(run, b);
    if (batch !== undefined) return batch;
  }
  if (writer === undefined || !plain) return encodeEvents(run.events(), serialize, writer, source);
  const n = run.count;
  roomForLengths(n);
  const lens = lensBuf;
  const chars = charsBuf;
  const { values, jsons, idPrefix, firstSeq } = run;
  let head = '';
  let o = 0;
  for (let i = 0; i < n; i++) {
    const s = firstSeq + i;
    const low = s & 1023;
    head = runIdHead(idPrefix, s, i, head);
    const start = o;
    const end = jsons === undefined || jsons[i] === undefined ? plainRecord(undefined, head, low, values[i], writer, start) : NEEDS_STRING;
    // Else text (a payload encoded at publish, or one the writer declined).
    o = end >= 0 ? bytesRecord(i, start, end) : textRecord(head + idTail(low) + lastTimeText + '0' + (jsons?.[i] ?? serialize(values[i])), start, i);
  }
  return { bytes: scratch.subarray(0, o), lens, chars, n };
}

/** The fixed header of the records of one block of 1024 ids (`headRecords`), the id's last two bytes aside. */
const template = new DataView(new ArrayBuffer(HEADER));
const templateBytes = new Uint8Array(template.buffer);

/**
 * The records of a run written as bytes at publish (`EventRun.bytes`), where they are: the fixed header (as
 * `plainRecord` writes it) is written into the room before each payload. Undefined when an id is not ASCII of
 * the header's width (then the records are written again from the run's values). Needs `plainRun(run)` (it
 * leaves the time current).
 *
 * Per block of 1024 ids the header is made once in `template` and held as ten 32-bit words; each record then
 * takes the ten words and its id's last two bytes (little-endian words: the byte order of the machines Node
 * runs on, so the stores need no byte swap).
 */
function headRecords(run: EventRun, b: RunBytes): EncodedBatch | undefined {
  const n = run.count;
  roomForLengths(n);
  const lens = lensBuf;
  const chars = charsBuf;
  const { buffer, ends } = b;
  const view = viewOf(buffer);
  const { idPrefix, firstSeq } = run;
  writeTime(template, ID_LEN);
  let w0 = 0, w1 = 0, w2 = 0, w3 = 0, w4 = 0, w5 = 0, w6 = 0, w7 = 0, w8 = 0, w9 = 0; // prettier-ignore
  let start = b.start;
  for (let i = 0; i < n; i++) {
    const s = firstSeq + i;
    const low = s & 1023;
    if (i === 0 || low === 0) {
      if (!writeHeadId(idHeadAt(idPrefix, s), 0, templateBytes, template, 0)) return undefined;
      w0 = template.getUint32(0, true);
      w1 = template.getUint32(4, true);
      w2 = template.getUint32(8, true);
      w3 = template.getUint32(12, true);
      w4 = template.getUint32(16, true);
      w5 = template.getUint32(20, true);
      w6 = template.getUint32(24, true); // bytes 24-25 are the id's last two, written per record
      w7 = template.getUint32(28, true);
      w8 = template.getUint32(32, true);
      w9 = template.getUint32(36, true);
    }
    view.setUint32(start, w0, true);
    view.setUint32(start + 4, w1, true);
    view.setUint32(start + 8, w2, true);
    view.setUint32(start + 12, w3, true);
    view.setUint32(start + 16, w4, true);
    view.setUint32(start + 20, w5, true);
    view.setUint32(start + 24, w6, true);
    view.setUint32(start + 28, w7, true);
    view.setUint32(start + 32, w8, true);
    view.setUint32(start + 36, w9, true);
    buffer[start + 24] = TAIL_BYTES[2 * low]!;
    buffer[start + 25] = TAIL_BYTES[2 * low + 1]!;
    const end = ends[i]!;
    lens[i] = chars[i] = end - start; // ASCII: bytes = UTF-16 units
    start = end;
  }
  return { bytes: buffer.subarray(b.start, start), lens, chars, n };
}

/** Whether a run's records are the fixed header and the payload alone (`plainHeader` for each event); leaves `timeText` current. */
function plainRun(run: EventRun): boolean {
  return timeText(run.time) !== '' && run.key === undefined && run.correlationId === undefined && run.causationId === undefined && run.headers === undefined && run.idPrefix.length === ID_LEN - 10;
}

/** The 13 time digits of the last `timeText` and the '0' flag, at `o` of the memory of `d`. */
function writeTime(d: DataView, o: number): number {
  d.setUint32(o, lastTimeWords.getUint32(0));
  d.setUint32(o + 4, lastTimeWords.getUint32(4));
  d.setUint32(o + 8, lastTimeWords.getUint32(8));
  d.setUint16(o + 12, lastTimeWords.getUint16(12)); // the last digit and the flag '0'
  return o + 14;
}

/** A copy of records `from..n` of a batch that outlives the scratch memory. */
export function copyBatch(b: EncodedBatch, from = 0): EncodedBatch {
  let skip = 0;
  for (let i = 0; i < from; i++) skip += b.lens[i]!;
  return { bytes: Uint8Array.prototype.slice.call(b.bytes, skip), lens: b.lens.slice(from, b.n), chars: b.chars.slice(from, b.n), n: b.n - from };
}

/**
 * Whether the event's record is the fixed header and the payload alone: an id of the usual width, a time
 * of 13 digits (`timeText`, which this leaves current for the header writers) and no extras.
 */
function plainHeader(ev: OutgoingEvent): boolean {
  return plainExtras(ev) && ev.id.length === ID_LEN;
}

/** `plainHeader` for an event whose id is known to have the usual width. */
function plainExtras(ev: OutgoingEvent): boolean {
  return timeText(ev.time) !== '' && ev.key === undefined && ev.correlationId === undefined && ev.causationId === undefined && ev.headers === undefined;
}

/** The record of an event as text: the fixed header, then extras (key, ids, headers, an unusual id/time) if any. */
function encodeEvent(ev: OutgoingEvent, json: string, source?: string): string {
  const time = timeText(ev.time);
  if (source === undefined && plainHeader(ev)) return ev.id + time + '0' + json;
  const plainId = ev.id.length === ID_LEN;
  const x: Extras = { k: ev.key, c: ev.correlationId, x: ev.causationId, h: ev.headers, s: source };
  if (!plainId) x.i = ev.id;
  if (time === '') x.t = ev.time;
  return (plainId ? ev.id : NO_ID) + (time !== '' ? time : '0000000000000') + '1' + JSON.stringify(x) + '\n' + json;
}

/**
 * An envelope read from a record on first access (worker consumers): `data` is parsed in place in its
 * batch's text, and a plain record's `id` and `time` are taken from its header only when asked for, so a
 * handler that routes on the payload pays for neither.
 */
export class LazyEnvelope implements EventEnvelope {
  declare key?: string;
  declare correlationId?: string;
  declare causationId?: string;
  declare headers?: EventHeaders;
  #text: string;
  /** Where the record starts (its header) and where its payload is. */
  #at: number;
  #start: number;
  #end: number;
  #read: JsonReader;
  #id: string | undefined;
  #time: number;
  #parsed = false;
  #data: unknown;
  constructor(
    readonly type: string,
    readonly source: string,
    text: string,
    at: number,
    start: number,
    end: number,
    read: JsonReader,
    /** An id and time from the record's extras; else from its header, when read. */
    id?: string,
    time = NaN,
  ) {
    this.#text = text;
    this.#at = at;
    this.#start = start;
    this.#end = end;
    this.#read = read;
    this.#id = id;
    this.#time = time;
  }
  get id(): string {
    return (this.#id ??= this.#text.slice(this.#at, this.#at + ID_LEN));
  }
  get time(): number {
    if (Number.isNaN(this.#time)) this.#time = headerTime(this.#text, this.#at);
    return this.#time;
  }
  get data(): unknown {
    if (!this.#parsed) {
      this.#data = this.#read(this.#text, this.#start, this.#end);
      this.#parsed = true;
    }
    return this.#data;
  }
  set data(value: unknown) {
    this.#parsed = true;
    this.#data = value;
  }
  toJSON(): EventEnvelope {
    return toPlainEnvelope(this);
  }
}

/** The 13-digit time of the record header at `s`. */
function headerTime(text: string, s: number): number {
  let time = 0;
  for (let j = s + ID_LEN; j < s + HEADER - 1; j++) time = time * 10 + text.charCodeAt(j) - 48;
  return time;
}

/** A plain (structured-cloneable) copy of an envelope. */
export function toPlainEnvelope(e: EventEnvelope): EventEnvelope {
  const env: { -readonly [K in keyof EventEnvelope]: EventEnvelope[K] } = { id: e.id, type: e.type, source: e.source, time: e.time, data: e.data };
  if (e.key !== undefined) env.key = e.key;
  if (e.correlationId !== undefined) env.correlationId = e.correlationId;
  if (e.causationId !== undefined) env.causationId = e.causationId;
  if (e.headers !== undefined) env.headers = e.headers;
  return env;
}

/**
 * A copy of `v` that shares no string with a popped batch's text. V8 makes a substring of 13 or more
 * characters a view of its parent string, so an id or a payload string read from a batch keeps the whole
 * batch text (up to `batchSize` records) alive: harmless while the event is handled, but an event kept for
 * long (a dead letter: up to `maxDeadLetters` of them) would keep a whole batch's text alive instead of its
 * own few hundred bytes. Strings are copied (JSON round trip: lossless, lone surrogates included); arrays and
 * plain objects are copied with their values; any other object (a Date, a class instance a schema made) is
 * kept as it is.
 */
export function detached<T>(v: T): T {
  if (typeof v === 'string') return (v.length < 13 ? v : JSON.parse(JSON.stringify(v))) as T;
  if (typeof v !== 'object' || v === null) return v;
  if (Array.isArray(v)) return v.map(detached) as T;
  const proto = Object.getPrototypeOf(v) as unknown;
  if (proto !== Object.prototype && proto !== null) return v;
  const out: Record<string, unknown> = proto === null ? Object.create(null) : {};
  for (const k of Object.keys(v)) out[k] = detached((v as Record<string, unknown>)[k]);
  return out as T;
}

/**
 * Decodes the `k` records of a popped batch (`offs[i]..offs[i+1]` is record i) into envelopes appended to
 * `out`, payloads parsed with `read` (the type's compiled reader, or JSON.parse); `lazy` leaves each payload,
 * and a plain record's id and time, unread until asked for.
 */
export function decodeRecords(text: string, offs: Uint32Array, k: number, type: string, source: string, lazy: boolean, read: JsonReader, out: EventEnvelope[]): void {
  for (let i = 0; i < k; i++) {
    const s = offs[i]!;
    const end = offs[i + 1]!;
    let p = s + HEADER;
    if (lazy && text.charCodeAt(s + HEADER - 1) !== 49) {
      out.push(new LazyEnvelope(type, source, text, s, p, end, read)); // a plain record: header and payload only
      continue;
    }
    let id = text.slice(s, s + ID_LEN);
    let time = headerTime(text, s);
    let x: Extras | undefined;
    if (text.charCodeAt(s + HEADER - 1) === 49) {
      const nl = text.indexOf('\n', p);
      x = JSON.parse(text.slice(p, nl)) as Extras;
      p = nl + 1;
      if (x.i !== undefined) id = x.i;
      if (x.t !== undefined) time = x.t;
    }
    const src = x?.s ?? source;
    let env: { -readonly [K in keyof EventEnvelope]?: EventEnvelope[K] };
    if (lazy) env = new LazyEnvelope(type, src, text, s, p, end, read, id, time);
    else env = { id, type, source: src, time, data: read(text, p, end) };
    if (x !== undefined) {
      if (x.k !== undefined) env.key = x.k;
      if (x.c !== undefined) env.correlationId = x.c;
      if (x.x !== undefined) env.causationId = x.x;
      if (x.h !== undefined) env.headers = x.h;
    }
    out.push(env as EventEnvelope);
  }
}
