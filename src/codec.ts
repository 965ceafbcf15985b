/**
 * Codecs for batches of envelopes of one event type. Versioned: every payload starts with a marker that
 * names its codec and version, so readers can refuse what they do not know.
 *
 * - `json` (default): `[{"id":..,"time":..,"data":..,"key"?..},...]`. Encodes once: the event's
 *   pre-encoded `json` is concatenated, never re-stringified. Decodes with one `JSON.parse`.
 * - `binary`: length-prefixed frames (the payload `data` stays JSON inside). Smaller for many small
 *   events with keys/headers, and cheap to skip through without parsing payloads.
 *
 * Binary layout (little endian): magic 0xE1 0x4C ('el'), version u8 (=1), count u32, then per event:
 * id (u8 len + ascii), time f64, flags u8 (1 key, 2 correlationId, 4 causationId, 8 headers),
 * each present optional string as u32 len + utf8 (headers as JSON), data as u32 len + utf8 JSON.
 */
import type { EventEnvelope } from './envelope.js';
import { DecodeError } from './errors.js';
import type { OutgoingEvent } from './transport.js';

export interface EnvelopeCodec {
  readonly name: 'json' | 'binary';
  readonly version: number;
  /** Encodes events of one type. */
  encode(events: readonly OutgoingEvent[]): string | Buffer;
  /** Decodes a payload into envelopes of `type` from `source`; throws `DecodeError` with the reason. */
  decode(payload: string | Buffer, type: string, source: string): EventEnvelope[];
}

function dataJson(ev: OutgoingEvent): string {
  return ev.json ?? JSON.stringify(ev.data);
}

/** One event as a JSON object (the element of a `json` batch). */
export function encodeEventJson(ev: OutgoingEvent): string {
  let s = '{"id":"' + ev.id + '","time":' + ev.time + ',"data":' + dataJson(ev);
  if (ev.key !== undefined) s += ',"key":' + JSON.stringify(ev.key);
  if (ev.correlationId !== undefined) s += ',"correlationId":' + JSON.stringify(ev.correlationId);
  if (ev.causationId !== undefined) s += ',"causationId":' + JSON.stringify(ev.causationId);
  if (ev.headers !== undefined) s += ',"headers":' + JSON.stringify(ev.headers);
  return s + '}';
}

export const jsonCodec: EnvelopeCodec = {
  name: 'json',
  version: 1,
  encode(events) {
    let s = '[';
    for (let i = 0; i < events.length; i++) {
      if (i > 0) s += ',';
      s += encodeEventJson(events[i]!);
    }
    return s + ']';
  },
  decode(payload, type, source) {
    let arr: unknown;
    try {
      arr = JSON.parse(typeof payload === 'string' ? payload : payload.toString('utf8'));
    } catch (err) {
      throw new DecodeError(`batch payload is not JSON: ${(err as Error).message}`, { cause: err });
    }
    if (!Array.isArray(arr)) throw new DecodeError('batch payload is not a JSON array');
    for (let i = 0; i < arr.length; i++) {
      const e = arr[i] as { id?: unknown; time?: unknown; type?: string; source?: string } | null;
      if (e === null || typeof e !== 'object' || typeof e.id !== 'string' || typeof e.time !== 'number' || !('data' in e)) {
        throw new DecodeError(`event ${i} of the batch lacks a string "id", a numeric "time" or "data"`);
      }
      e.type = type;
      e.source = source;
    }
    return arr as EventEnvelope[];
  },
};

const MAGIC0 = 0xe1;
const MAGIC1 = 0x4c;
const F_KEY = 1;
const F_CORR = 2;
const F_CAUS = 4;
const F_HEAD = 8;

export const binaryCodec: EnvelopeCodec = {
  name: 'binary',
  version: 1,
  encode(events) {
    const n = events.length;
    const parts: string[][] = new Array(n);
    let size = 7;
    for (let i = 0; i < n; i++) {
      const ev = events[i]!;
      const strs = [dataJson(ev)];
      if (ev.key !== undefined) strs.push(ev.key);
      if (ev.correlationId !== undefined) strs.push(ev.correlationId);
      if (ev.causationId !== undefined) strs.push(ev.causationId);
      if (ev.headers !== undefined) strs.push(JSON.stringify(ev.headers));
      parts[i] = strs;
      size += 1 + ev.id.length + 8 + 1;
      for (const s of strs) size += 4 + Buffer.byteLength(s);
    }
    const buf = Buffer.allocUnsafe(size);
    buf[0] = MAGIC0;
    buf[1] = MAGIC1;
    buf[2] = 1;
    buf.writeUInt32LE(n, 3);
    let o = 7;
    const str = (s: string) => {
      const len = buf.write(s, o + 4, 'utf8');
      buf.writeUInt32LE(len, o);
      o += 4 + len;
    };
    for (let i = 0; i < n; i++) {
      const ev = events[i]!;
      buf[o++] = ev.id.length;
      o += buf.write(ev.id, o, 'latin1');
      buf.writeDoubleLE(ev.time, o);
      o += 8;
      buf[o++] = (ev.key !== undefined ? F_KEY : 0) | (ev.correlationId !== undefined ? F_CORR : 0) | (ev.causationId !== undefined ? F_CAUS : 0) | (ev.headers !== undefined ? F_HEAD : 0);
      const strs = parts[i]!;
      for (let k = 1; k < strs.length; k++) str(strs[k]!);
      str(strs[0]!);
    }
    return buf;
  },
  decode(payload, type, source) {
    const buf = typeof payload === 'string' ? Buffer.from(payload, 'latin1') : payload;
    if (buf.length < 7 || buf[0] !== MAGIC0 || buf[1] !== MAGIC1) throw new DecodeError('not a binary eventlane batch (bad magic)');
    if (buf[2] !== 1) throw new DecodeError(`binary batch version ${buf[2]} is not supported (this reader knows 1)`);
    const n = buf.readUInt32LE(3);
    const out: EventEnvelope[] = [];
    let o = 7;
    const need = (k: number) => {
      if (o + k > buf.length) throw new DecodeError(`binary batch truncated at byte ${o}`);
    };
    const str = () => {
      need(4);
      const len = buf.readUInt32LE(o);
      need(4 + len);
      const s = buf.toString('utf8', o + 4, o + 4 + len);
      o += 4 + len;
      return s;
    };
    for (let i = 0; i < n; i++) {
      need(1);
      const idLen = buf[o++]!;
      need(idLen + 9);
      const id = buf.toString('latin1', o, o + idLen);
      o += idLen;
      const time = buf.readDoubleLE(o);
      o += 8;
      const flags = buf[o++]!;
      const env: Record<string, unknown> = { id, type, source, time };
      if (flags & F_KEY) env.key = str();
      if (flags & F_CORR) env.correlationId = str();
      if (flags & F_CAUS) env.causationId = str();
      try {
        if (flags & F_HEAD) env.headers = JSON.parse(str());
        env.data = JSON.parse(str());
      } catch (err) {
        if (err instanceof DecodeError) throw err;
        throw new DecodeError(`event ${i} of the binary batch has invalid JSON: ${(err as Error).message}`, { cause: err });
      }
      out.push(env as unknown as EventEnvelope);
    }
    return out;
  },
};

export const codecs = { json: jsonCodec, binary: binaryCodec } as const;

/** The codec that wrote `payload`: binary batches start with the magic bytes, everything else is JSON. */
export function detectCodec(payload: string | Buffer): EnvelopeCodec {
  const b0 = typeof payload === 'string' ? payload.charCodeAt(0) : payload[0];
  const b1 = typeof payload === 'string' ? payload.charCodeAt(1) : payload[1];
  return b0 === MAGIC0 && b1 === MAGIC1 ? binaryCodec : jsonCodec;
}
