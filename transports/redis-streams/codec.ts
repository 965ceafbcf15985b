/**
 * Wire codec, version 1 (see docs/wire-format.md). Publishing encodes once: a batch entry's whole XADD
 * request is written into one buffer (payloads by the schema's compiled JSON writer where there is
 * one). Consuming decodes a batch entry with one `JSON.parse` of its payloads.
 */
import { stringifyAnyDepth } from '../../src/deep-json.js';
import type { EventEnvelope } from '../../src/envelope.js';
import type { EventRun, OutgoingEvent } from '../../src/transport.js';
import { NO_ROOM, type DirectBuffer, type JsonWriter } from '../../src/json-writer.js';
import { parseJsonSlice, type JsonReader } from '../../src/json-reader.js';
import { writeIdBytes, writeRunIdBytes } from '../../src/outgoing.js';
import { argBytes, bulkBytes, digits, RespWriter, type WireArg } from './wire-command.js';

export const WIRE_VERSION = '1';

/** Width of eventlane ids; a batch whose ids all have it stores them concatenated. */
export const ID_WIDTH = 26;

/**
 * Builds batch entries (wire format v1, kind `batch`):
 *   payloads  JSON array of the events' data, in order: `[` + json + `,` + json ... `]`
 *   ids       the event ids concatenated (each `idw` chars), or a JSON array of strings when `idw` is 0
 *   times     run-length publish times: JSON `[time, count, time, count, ...]`
 *   meta      optional JSON object `{ "<index>": { key?, correlationId?, causationId?, headers? } }`
 * as the whole XADD request (RESP bytes), written into one buffer: the ids go in as bytes, and the
 * payloads are written by the schema's compiled JSON writer where there is one (events the bus already
 * encoded are copied as they are), else by their string encoder: nothing is encoded twice, and no
 * string is built for the ids or the payloads.
 */
/** Encodes an event's validated payload to JSON (the bus's schema-compiled serializer). */
export type Encode = (data: unknown) => string;

/** The ids of the batch being encoded (`request` is synchronous, so one buffer serves every call). */
let idScratch = Buffer.allocUnsafeSlow(ID_WIDTH * 4096);

/** Room left for the payloads' length header `$<len>\r\n` (any length a Buffer can have). */
const LENGTH_ROOM = 1 + 16 + 2;

export class BatchEncoder {
  /**
   * `XADD <head...> v 1 kind batch ... payloads [...]` as RESP bytes. `head` is the key, the trimming
   * arguments and `*`. `bytes` is the sum of the events' JSON lengths (the unit's `bytes`), the
   * payloads' first size estimate.
   */
  request(head: readonly WireArg[], type: string, source: string, events: readonly OutgoingEvent[], bytes: number, serialize: Encode, writer?: JsonWriter): Buffer {
    const n = events.length;
    let t = n > 0 ? events[0]!.time : 0;
    let run = 0;
    let times = '[';
    let meta: string | undefined;
    for (let i = 0; i < n; i++) {
      const ev = events[i]!;
      if (ev.time !== t) {
        times += t + ',' + run + ',';
        t = ev.time;
        run = 0;
      }
      run++;
      if (hasMeta(ev)) meta = (meta === undefined ? '{' : meta + ',') + '"' + i + '":' + encodeMeta(ev);
    }
    times += n > 0 ? t + ',' + run + ']' : ']';
    // The ids as bytes, without building their strings; a JSON array when some id is not 26 ASCII characters.
    const fixed = writeIdBytes(events, idRoom(n), 0);
    const ids: WireArg = fixed ? idScratch.subarray(0, n * ID_WIDTH) : JSON.stringify(events.map((e) => e.id));
    return this.assemble(head, type, source, n, ids, fixed, times, meta, bytes, (w) => this.payloads(w, n, events, undefined, undefined, bytes, serialize, writer));
  }

  /** `request` for a run of a publishMany call (`PublishUnit.run`): one time, shared options, consecutive ids. */
  requestRun(head: readonly WireArg[], type: string, source: string, run: EventRun, bytes: number, serialize: Encode, writer?: JsonWriter): Buffer {
    const n = run.count;
    const times = '[' + run.time + ',' + n + ']';
    let meta: string | undefined;
    if (hasMeta(run)) {
      const m = encodeMeta(run);
      meta = '{';
      for (let i = 0; i < n; i++) meta += (i > 0 ? ',"' : '"') + i + '":' + m;
    }
    const fixed = writeRunIdBytes(run, idRoom(n), 0);
    const ids: WireArg = fixed ? idScratch.subarray(0, n * ID_WIDTH) : JSON.stringify(Array.from({ length: n }, (_, i) => run.id(i)));
    return this.assemble(head, type, source, n, ids, fixed, times, meta, bytes, (w) => this.payloads(w, n, undefined, run.values, run.jsons, bytes, serialize, writer));
  }

  /** The request around the payloads, which `payloads` writes at its place. */
  private assemble(
    head: readonly WireArg[],
    type: string,
    source: string,
    n: number,
    ids: WireArg,
    fixed: boolean,
    times: string,
    meta: string | undefined,
    bytes: number,
    payloads: (w: RespWriter) => void,
  ): Buffer {
    const idsLen = argBytes(ids);
    const fields: WireArg[] = ['v', WIRE_VERSION, 'kind', 'batch', 'type', type, 'source', source, 'count', n, 'idw', fixed ? ID_WIDTH : 0];
    const more: WireArg[] = ['times', times];
    if (meta !== undefined) more.push('meta', meta + '}');
    more.push('payloads');
    const args = 1 + head.length + fields.length + 2 + more.length + 1;
    let size = 1 + digits(args) + 2 + bulkBytes(4) + bulkBytes(3) + bulkBytes(idsLen) + LENGTH_ROOM + (bytes > 0 ? bytes : n * 96) + n + 4;
    for (const a of head) size += bulkBytes(argBytes(a));
    for (const a of fields) size += bulkBytes(argBytes(a));
    for (const a of more) size += bulkBytes(argBytes(a));
    const w = new RespWriter(size);
    w.header(0x2a, args);
    w.bulk('xadd', 4);
    for (const a of head) w.bulk(a, argBytes(a));
    for (const a of fields) w.bulk(a, argBytes(a));
    w.bulk('ids', 3);
    w.bulk(ids, idsLen);
    for (const a of more) w.bulk(a, argBytes(a));
    // The payloads' length is known once they are written: leave room for its header, then close the
    // gap by moving everything before it (the request so far, a few hundred bytes plus the ids).
    const lengthAt = w.off;
    w.off += LENGTH_ROOM;
    payloads(w);
    const len = w.off - lengthAt - LENGTH_ROOM;
    const gap = LENGTH_ROOM - (1 + digits(len) + 2);
    w.reserve(2);
    w.crlf();
    const end = w.off;
    w.buf.copyWithin(gap, 0, lengthAt);
    w.off = lengthAt + gap;
    w.header(0x24, len);
    return w.buf.subarray(gap, end);
  }

  /**
   * `[json,json,...]` as UTF-8 at the writer's offset: each event's existing JSON, else its payload
   * written by the compiled writer, else its string encoding.
   */
  private payloads(
    w: RespWriter,
    n: number,
    /** The events, or else a run's payloads and their JSON */
    events: readonly OutgoingEvent[] | undefined,
    values: readonly unknown[] | undefined,
    jsons: readonly (string | undefined)[] | undefined,
    bytes: number,
    serialize: Encode,
    writer: JsonWriter | undefined,
  ): void {
    const start = w.off;
    w.reserve(1);
    w.buf[w.off++] = 0x5b; // [
    for (let i = 0; i < n; i++) {
      const ev = events?.[i];
      const data = ev !== undefined ? ev.data : values![i];
      const encoded = ev !== undefined ? ev.json : jsons?.[i];
      if (i > 0) {
        w.reserve(1);
        w.buf[w.off++] = 0x2c; // ,
      }
      if (encoded === undefined && writer !== undefined) {
        let end = writer(data, w.buf, w.off);
        while (end === NO_ROOM) {
          w.reserve(w.buf.length - w.off + 1); // doubles
          end = writer(data, w.buf, w.off);
        }
        if (end >= 0) {
          w.off = end;
          continue;
        }
      }
      const json = encoded ?? serialize(data);
      // Worst case 3 bytes per UTF-16 unit; measured only when that might not fit.
      if (w.off + json.length * 3 > w.buf.length) w.reserve(Buffer.byteLength(json) + Math.max(0, bytes - (w.off - start)));
      w.off += (w.buf as DirectBuffer).utf8Write(json, w.off);
    }
    w.reserve(1);
    w.buf[w.off++] = 0x5d; // ]
  }
}

/** The options an event (or a run) carries besides its payload. */
type MetaOf = Pick<OutgoingEvent, 'key' | 'correlationId' | 'causationId' | 'headers'>;

function hasMeta(ev: MetaOf): boolean {
  return ev.key !== undefined || ev.correlationId !== undefined || ev.causationId !== undefined || ev.headers !== undefined;
}

/** `idScratch` with room for `n` ids. */
function idRoom(n: number): Buffer {
  if (idScratch.length < n * ID_WIDTH) idScratch = Buffer.allocUnsafeSlow(Math.max(n * ID_WIDTH, idScratch.length * 2));
  return idScratch;
}

function encodeMeta(ev: MetaOf): string {
  const m: Record<string, unknown> = {};
  if (ev.key !== undefined) m['key'] = ev.key;
  if (ev.correlationId !== undefined) m['correlationId'] = ev.correlationId;
  if (ev.causationId !== undefined) m['causationId'] = ev.causationId;
  if (ev.headers !== undefined) m['headers'] = ev.headers;
  return JSON.stringify(m);
}

/** Appends the field/value pairs of a per-event entry to `out`. */
export function pushEventFields(out: (string | number)[], ev: OutgoingEvent, source: string, serialize: Encode = JSON.stringify): void {
  out.push('v', WIRE_VERSION, 'kind', 'event', 'id', ev.id, 'type', ev.type, 'source', source, 'time', String(ev.time), 'data', ev.json ?? serialize(ev.data));
  if (ev.key !== undefined) out.push('key', ev.key);
  if (ev.correlationId !== undefined) out.push('correlationId', ev.correlationId);
  if (ev.causationId !== undefined) out.push('causationId', ev.causationId);
  if (ev.headers !== undefined) out.push('headers', JSON.stringify(ev.headers));
}

/**
 * Field/value pairs of an envelope as a per-event entry (retry and replay entries). The data is written at
 * any depth: it was read from a stream (JSON.parse reads any depth), so it must be writable back.
 */
export function envelopeFields(env: EventEnvelope): string[] {
  const out = ['v', WIRE_VERSION, 'kind', 'event', 'id', env.id, 'type', env.type, 'source', env.source, 'time', String(env.time), 'data', stringifyAnyDepth(env.data)];
  if (env.key !== undefined) out.push('key', env.key);
  if (env.correlationId !== undefined) out.push('correlationId', env.correlationId);
  if (env.causationId !== undefined) out.push('causationId', env.causationId);
  if (env.headers !== undefined) out.push('headers', JSON.stringify(env.headers));
  return out;
}

/** A decoded stream entry. */
export interface DecodedEntry {
  events: EventEnvelope[];
  /** Attempt of the events (retry entries carry it; 1 otherwise). */
  attempt: number;
  /** Retry entries: not before this time (ms). 0 otherwise. */
  due: number;
}

/** A per-event entry's `time`: ms since the epoch, in decimal. */
const TIME_MS = /^\d{1,16}(\.\d+)?$/;

/** Thrown (as a plain value) by decode: the reason an entry is malformed. */
export class Malformed {
  constructor(readonly reason: string) {}
}

/** Milliseconds part of a stream id. */
export function idTime(streamId: string): number {
  const dash = streamId.indexOf('-');
  return Number(dash < 0 ? streamId : streamId.slice(0, dash));
}

/**
 * Decodes one entry (`fields` as returned by XREADGROUP: [f1, v1, f2, v2, ...]). Returns `Malformed`
 * with the reason instead of throwing. Entries without `v` are read as per-event entries of a
 * foreign producer: only `data` (JSON) is required; `id` and `time` default to the stream id.
 * `readData` parses a per-event entry's `data` (the type's compiled reader, faster than JSON.parse on
 * small payloads); a batch entry's `payloads` array is one JSON.parse, which the compiled readers do not beat.
 * `attempt` and `due` are read only from a group's retry stream (`retryStream`), where the consumers write
 * them: in a partition stream they are another producer's fields (its own "attempt" must not dead-letter
 * the event at once, nor a "due" hold it back).
 */
export function decodeEntry(streamId: string, fields: readonly string[] | null, fallbackType: string, readData: JsonReader = parseJsonSlice, retryStream = false): DecodedEntry | Malformed {
  if (fields === null || fields === undefined) return new Malformed('entry has no fields');
  let v: string | undefined;
  let kind: string | undefined;
  let type: string | undefined;
  let source: string | undefined;
  let payloads: string | undefined;
  let count: string | undefined;
  let idw: string | undefined;
  let ids: string | undefined;
  let times: string | undefined;
  let meta: string | undefined;
  let id: string | undefined;
  let time: string | undefined;
  let data: string | undefined;
  let key: string | undefined;
  let correlationId: string | undefined;
  let causationId: string | undefined;
  let headers: string | undefined;
  let attempt: string | undefined;
  let due: string | undefined;
  for (let i = 0; i + 1 < fields.length; i += 2) {
    const val = fields[i + 1]!;
    switch (fields[i]) {
      case 'v':
        v = val;
        break;
      case 'kind':
        kind = val;
        break;
      case 'type':
        type = val;
        break;
      case 'source':
        source = val;
        break;
      case 'payloads':
        payloads = val;
        break;
      case 'count':
        count = val;
        break;
      case 'idw':
        idw = val;
        break;
      case 'ids':
        ids = val;
        break;
      case 'times':
        times = val;
        break;
      case 'meta':
        meta = val;
        break;
      case 'id':
        id = val;
        break;
      case 'time':
        time = val;
        break;
      case 'data':
        data = val;
        break;
      case 'key':
        key = val;
        break;
      case 'correlationId':
        correlationId = val;
        break;
      case 'causationId':
        causationId = val;
        break;
      case 'headers':
        headers = val;
        break;
      case 'attempt':
        if (retryStream) attempt = val;
        break;
      case 'due':
        if (retryStream) due = val;
        break;
      default:
        break;
    }
  }
  if (v !== undefined && v !== WIRE_VERSION) return new Malformed(`unsupported wire version "${v}" (this reader knows ${WIRE_VERSION})`);
  // A stream holds one type: an entry naming another would reach handlers typed for this one.
  if (type !== undefined && type !== fallbackType) return new Malformed(`field "type" is "${type}", not the stream's type "${fallbackType}"`);
  const t = fallbackType;
  const src = source ?? '';
  const att = attempt === undefined ? 1 : Number(attempt);
  if (!Number.isInteger(att) || att < 1) return new Malformed(`field "attempt" is not a positive integer: ${attempt}`);
  const dueMs = due === undefined ? 0 : Number(due);
  if (kind === 'batch') return decodeBatch(t, src, att, dueMs, count, idw, ids, times, meta, payloads);
  if (kind !== undefined && kind !== 'event') return new Malformed(`unknown entry kind "${kind}"`);
  if (data === undefined) return new Malformed('entry has no field "data" (nor "payloads")');
  let value: unknown;
  try {
    value = readData(data, 0, data.length);
  } catch (err) {
    return new Malformed(`field "data" is not JSON: ${(err as Error).message}`);
  }
  // Decimal digits only: Number() takes '' (0), '0x10' and ' 5 ' too.
  if (time !== undefined && !TIME_MS.test(time)) return new Malformed(`field "time" is not a time in ms: "${time}"`);
  const at = time === undefined ? idTime(streamId) : Number(time);
  if (id === '') return new Malformed('field "id" is empty (omit it to take the stream entry id)');
  const env: { -readonly [K in keyof EventEnvelope]: EventEnvelope[K] } = {
    id: id ?? streamId,
    type: t,
    source: src,
    time: at,
    data: value,
  };
  if (key !== undefined) env.key = key;
  if (correlationId !== undefined) env.correlationId = correlationId;
  if (causationId !== undefined) env.causationId = causationId;
  if (headers !== undefined) {
    const parsed = parseJson('headers', headers);
    if (parsed instanceof Malformed) return parsed;
    if (!isStringMap(parsed)) return new Malformed('field "headers" is not a JSON object of strings');
    env.headers = parsed;
  }
  return { events: [env], attempt: att, due: dueMs };
}

/** Fields array to a plain object (DLQ `raw`, diagnostics). */
export function fieldsToObject(fields: readonly string[] | null): Record<string, string> {
  const o: Record<string, string> = {};
  if (fields) for (let i = 0; i + 1 < fields.length; i += 2) o[fields[i]!] = fields[i + 1]!;
  return o;
}

function parseJson(field: string, text: string): unknown | Malformed {
  try {
    return JSON.parse(text);
  } catch (err) {
    return new Malformed(`field "${field}" is not JSON: ${(err as Error).message}`);
  }
}

function isStringMap(v: unknown): v is Record<string, string> {
  if (v === null || typeof v !== 'object' || Array.isArray(v)) return false;
  for (const k in v) if (typeof (v as Record<string, unknown>)[k] !== 'string') return false;
  return true;
}

type MetaFields = { key?: string; correlationId?: string; causationId?: string; headers?: Record<string, string> };

/**
 * A batch entry's `meta`: an object whose keys are indexes of its events and whose values hold only string
 * `key`, `correlationId` and `causationId`, and `headers` of strings (as a per-event entry's fields are checked).
 */
function checkMeta(v: unknown, n: number): Record<string, MetaFields> | Malformed {
  if (v === null || typeof v !== 'object' || Array.isArray(v)) return new Malformed('field "meta" is not a JSON object');
  for (const [index, m] of Object.entries(v)) {
    const i = Number(index);
    if (!Number.isInteger(i) || i < 0 || i >= n || String(i) !== index) return new Malformed(`field "meta" names event "${index}", not an index of the ${n} payloads`);
    if (m === null || typeof m !== 'object' || Array.isArray(m)) return new Malformed(`field "meta" of event ${index} is not a JSON object`);
    for (const [name, value] of Object.entries(m as Record<string, unknown>)) {
      const ok = name === 'headers' ? isStringMap(value) : name === 'key' || name === 'correlationId' || name === 'causationId' ? typeof value === 'string' : true;
      if (!ok) return new Malformed(`field "meta" of event ${index}: "${name}" is not ${name === 'headers' ? 'a JSON object of strings' : 'a string'}`);
    }
  }
  return v as Record<string, MetaFields>;
}

/** A batch entry: one JSON.parse of `payloads`, ids sliced from one string, times from a short run list. */
function decodeBatch(
  type: string,
  source: string,
  attempt: number,
  due: number,
  countText: string | undefined,
  idwText: string | undefined,
  idsText: string | undefined,
  timesText: string | undefined,
  metaText: string | undefined,
  payloadsText: string | undefined,
): DecodedEntry | Malformed {
  if (payloadsText === undefined) return new Malformed('batch entry without field "payloads"');
  if (idsText === undefined || timesText === undefined) return new Malformed('batch entry without field "ids" or "times"');
  const data = parseJson('payloads', payloadsText);
  if (data instanceof Malformed) return data;
  if (!Array.isArray(data)) return new Malformed('field "payloads" is not a JSON array');
  const n = data.length;
  if (countText !== undefined && Number(countText) !== n) return new Malformed(`field "count" says ${countText} but "payloads" holds ${n}`);
  const idw = idwText === undefined ? 0 : Number(idwText);
  let idList: unknown[] | undefined;
  if (idw > 0) {
    if (idsText.length !== idw * n) return new Malformed(`field "ids" has ${idsText.length} chars, expected ${n} x ${idw}`);
  } else {
    const parsed = parseJson('ids', idsText);
    if (parsed instanceof Malformed) return parsed;
    if (!Array.isArray(parsed) || parsed.length !== n || !parsed.every((id) => typeof id === 'string')) return new Malformed(`field "ids" is not a JSON array of ${n} string ids`);
    idList = parsed;
  }
  const runs = parseJson('times', timesText);
  if (runs instanceof Malformed) return runs;
  if (!Array.isArray(runs) || runs.length % 2 !== 0) return new Malformed('field "times" is not a [time, count, ...] array');
  let counted = 0;
  for (let r = 0; r < runs.length; r += 2) {
    const count = runs[r + 1];
    if (!Number.isFinite(runs[r]) || !Number.isInteger(count) || count < 1) {
      return new Malformed(`field "times" has a bad run [${JSON.stringify(runs[r])}, ${JSON.stringify(count)}]: expected a time in ms and a count of at least 1`);
    }
    counted += count;
  }
  if (counted !== n) return new Malformed(`field "times" counts ${counted} events but "payloads" holds ${n}`);
  let meta: Record<string, MetaFields> | undefined;
  if (metaText !== undefined) {
    const parsed = parseJson('meta', metaText);
    if (parsed instanceof Malformed) return parsed;
    const checked = checkMeta(parsed, n);
    if (checked instanceof Malformed) return checked;
    meta = checked;
  }
  const events: EventEnvelope[] = new Array(n);
  let r = 0;
  let time = Number(runs[0]);
  let left = Number(runs[1]);
  for (let i = 0; i < n; i++) {
    while (left <= 0 && r + 2 < runs.length) {
      r += 2;
      time = Number(runs[r]);
      left = Number(runs[r + 1]);
    }
    left--;
    const id = idList === undefined ? idsText.substr(i * idw, idw) : String(idList[i]);
    const env: { -readonly [K in keyof EventEnvelope]: EventEnvelope[K] } = { id, type, source, time, data: data[i] };
    if (meta !== undefined) {
      const m = meta[i];
      if (m !== undefined) {
        if (m.key !== undefined) env.key = m.key;
        if (m.correlationId !== undefined) env.correlationId = m.correlationId;
        if (m.causationId !== undefined) env.causationId = m.causationId;
        if (m.headers !== undefined) env.headers = m.headers;
      }
    }
    events[i] = env;
  }
  return { events, attempt, due };
}
