/**
 * Reading the records of the native transport (format in record.ts): a popped batch's records as envelopes,
 * parsed at once or (worker consumers) lazily, on first access; and the plain, detached copies of envelopes
 * that are kept or sent to another thread.
 */
import type { EventEnvelope, EventHeaders } from '../../src/envelope.js';
import type { JsonReader } from '../../src/json-reader.js';
import { FLAG_EXTRAS, FLAG_PLAIN, flagHeaders, HEADER as RECORD_HEADER, ID_LEN as RECORD_ID_LEN, type Extras } from './record.js';

// The format's sizes as this module's own constants, as the per-record code reads them.
const ID_LEN = RECORD_ID_LEN;
const HEADER = RECORD_HEADER;

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
    const flag = text.charCodeAt(s + HEADER - 1);
    if (lazy && flag !== FLAG_EXTRAS) {
      const env = new LazyEnvelope(type, source, text, s, p, end, read); // a plain record: header and payload only
      if (flag !== FLAG_PLAIN) env.headers = flagHeaders(flag);
      out.push(env);
      continue;
    }
    let id = text.slice(s, s + ID_LEN);
    let time = headerTime(text, s);
    let x: Extras | undefined;
    if (flag === FLAG_EXTRAS) {
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
    if (x !== undefined) setExtras(env, x);
    else if (flag !== FLAG_PLAIN) env.headers = flagHeaders(flag);
    out.push(env as EventEnvelope);
  }
}

/** The options a record's extras hold, on its envelope. */
function setExtras(env: { -readonly [K in keyof EventEnvelope]?: EventEnvelope[K] }, x: Extras): void {
  if (x.k !== undefined) env.key = x.k;
  if (x.c !== undefined) env.correlationId = x.c;
  if (x.x !== undefined) env.causationId = x.x;
  if (x.h !== undefined) env.headers = x.h;
}
