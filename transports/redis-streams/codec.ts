/**
 * Wire codec, version 1 (see docs/wire-format.md): the wire constants and the encoding of entries.
 * Publishing encodes once: a batch entry's whole XADD request is written into one buffer (payloads by the
 * schema's compiled JSON writer where there is one); per-event entries (interop, retries, replays) are
 * field/value lists. Decoding is decode-entry.ts's (per-event entries) and decode-batch.ts's.
 */
import { stringifyAnyDepth } from '../../src/deep-json.js';
import type { EventEnvelope, EventHeaders } from '../../src/envelope.js';
import type { EventRun, OutgoingEvent } from '../../src/transport.js';
import { NO_ROOM, type DirectBuffer, type JsonWriter } from '../../src/json-writer.js';
import { shapeSamples, writeIdBytes, writeRunIdBytes } from '../../src/outgoing.js';
import { keepShapes } from '../../src/v8-shapes.js';
import { DATA_VERSION_FIELD, headersBeside, versionOf } from './data-version.js';
import { argBytes, bulkBytes, digits, RespWriter, type WireArg } from './wire-command.js';

// Every event and run of a Redis bus dies once written: src/v8-shapes.ts keeps their maps.
keepShapes(...shapeSamples());

export const WIRE_VERSION = '1';

/** Width of eventlane ids; a batch whose ids all have it stores them concatenated. */
export const ID_WIDTH = 26;

/**
 * Builds batch entries (wire format v1, kind `batch`):
 *   payloads  JSON array of the events' data, in order: `[` + json + `,` + json ... `]`
 *   ids       the event ids concatenated (each `idw` chars), or a JSON array of strings when `idw` is 0
 *   times     run-length publish times: JSON `[time, count, time, count, ...]`
 *   meta      optional JSON object `{ "<index>": { key?, correlationId?, causationId?, headers? } }`
 *   dataVersion  optional: the payloads' schema version (data-version.ts), left out of each event's headers
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
    // The first event's version is the entry's (a unit's events come from one bus); another one stays in its headers.
    const version = n > 0 ? versionOf(events[0]!.headers) : undefined;
    for (let i = 0; i < n; i++) {
      const ev = events[i]!;
      if (ev.time !== t) {
        times += t + ',' + run + ',';
        t = ev.time;
        run = 0;
      }
      run++;
      if (hasMeta(ev, version)) meta = (meta === undefined ? '{' : meta + ',') + '"' + i + '":' + encodeMeta(ev, version);
    }
    times += n > 0 ? t + ',' + run + ']' : ']';
    // The ids as bytes, without building their strings; a JSON array when some id is not 26 ASCII characters.
    const fixed = writeIdBytes(events, idRoom(n), 0);
    const ids: WireArg = fixed ? idScratch.subarray(0, n * ID_WIDTH) : JSON.stringify(events.map((e) => e.id));
    const payloads = (w: RespWriter) => this.payloads(w, n, events, undefined, undefined, bytes, serialize, writer);
    return this.assemble(head, type, source, n, ids, fixed, times, meta, version, bytes, payloads);
  }

  /** `request` for a run of a publishMany call (`PublishUnit.run`): one time, shared options, consecutive ids. */
  requestRun(head: readonly WireArg[], type: string, source: string, run: EventRun, bytes: number, serialize: Encode, writer?: JsonWriter): Buffer {
    const n = run.count;
    const times = '[' + run.time + ',' + n + ']';
    let meta: string | undefined;
    const version = versionOf(run.headers);
    if (hasMeta(run, version)) {
      const m = encodeMeta(run, version);
      meta = '{';
      for (let i = 0; i < n; i++) meta += (i > 0 ? ',"' : '"') + i + '":' + m;
    }
    const fixed = writeRunIdBytes(run, idRoom(n), 0);
    const ids: WireArg = fixed ? idScratch.subarray(0, n * ID_WIDTH) : JSON.stringify(Array.from({ length: n }, (_, i) => run.id(i)));
    const payloads = (w: RespWriter) => this.payloads(w, n, undefined, run.values, run.jsons, bytes, serialize, writer);
    return this.assemble(head, type, source, n, ids, fixed, times, meta, version, bytes, payloads);
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
    version: string | undefined,
    bytes: number,
    payloads: (w: RespWriter) => void,
  ): Buffer {
    const idsLen = argBytes(ids);
    const fields: WireArg[] = ['v', WIRE_VERSION, 'kind', 'batch', 'type', type, 'source', source, 'count', n, 'idw', fixed ? ID_WIDTH : 0];
    const more: WireArg[] = ['times', times];
    if (meta !== undefined) more.push('meta', meta + '}');
    if (version !== undefined) more.push(DATA_VERSION_FIELD, version);
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

/** Whether the event has options to write in `meta`, its version header left out when it is the entry's `version`. */
function hasMeta(ev: MetaOf, version: string | undefined): boolean {
  return ev.key !== undefined || ev.correlationId !== undefined || ev.causationId !== undefined || headersBeside(ev.headers, version) !== undefined;
}

/** `idScratch` with room for `n` ids. */
function idRoom(n: number): Buffer {
  if (idScratch.length < n * ID_WIDTH) idScratch = Buffer.allocUnsafeSlow(Math.max(n * ID_WIDTH, idScratch.length * 2));
  return idScratch;
}

function encodeMeta(ev: MetaOf, version: string | undefined): string {
  const m: Record<string, unknown> = {};
  if (ev.key !== undefined) m['key'] = ev.key;
  if (ev.correlationId !== undefined) m['correlationId'] = ev.correlationId;
  if (ev.causationId !== undefined) m['causationId'] = ev.causationId;
  const headers = headersBeside(ev.headers, version);
  if (headers !== undefined) m['headers'] = headers;
  return JSON.stringify(m);
}

/** Appends the field/value pairs of a per-event entry to `out`. */
export function pushEventFields(out: (string | number)[], ev: OutgoingEvent, source: string, serialize: Encode = JSON.stringify): void {
  out.push('v', WIRE_VERSION, 'kind', 'event', 'id', ev.id, 'type', ev.type, 'source', source, 'time', String(ev.time), 'data', ev.json ?? serialize(ev.data));
  if (ev.key !== undefined) out.push('key', ev.key);
  if (ev.correlationId !== undefined) out.push('correlationId', ev.correlationId);
  if (ev.causationId !== undefined) out.push('causationId', ev.causationId);
  pushHeaderFields(out, ev.headers);
}

/** The `dataVersion` field and the `headers` field (without the version) of headers `h`. */
function pushHeaderFields(out: (string | number)[], h: EventHeaders | undefined): void {
  const version = versionOf(h);
  if (version !== undefined) out.push(DATA_VERSION_FIELD, version);
  const headers = headersBeside(h, version);
  if (headers !== undefined) out.push('headers', JSON.stringify(headers));
}

/**
 * Field/value pairs of an envelope as a per-event entry (retry and replay entries). The data is written at
 * any depth: it was read from a stream (JSON.parse reads any depth), so it must be writable back.
 */
export function envelopeFields(env: EventEnvelope): string[] {
  const out: string[] = ['v', WIRE_VERSION, 'kind', 'event', 'id', env.id, 'type', env.type, 'source', env.source, 'time', String(env.time), 'data', stringifyAnyDepth(env.data)];
  if (env.key !== undefined) out.push('key', env.key);
  if (env.correlationId !== undefined) out.push('correlationId', env.correlationId);
  if (env.causationId !== undefined) out.push('causationId', env.causationId);
  pushHeaderFields(out, env.headers);
  return out;
}

/** Fields array to a plain object (DLQ `raw`, diagnostics). */
export function fieldsToObject(fields: readonly string[] | null): Record<string, string> {
  const o: Record<string, string> = {};
  if (fields) for (let i = 0; i + 1 < fields.length; i += 2) o[fields[i]!] = fields[i + 1]!;
  return o;
}
