/**
 * Wire codec, version 1 (see docs/wire-format.md). Publishing encodes once: the bus hands us each
 * event's `JSON.stringify(data)` and a batch entry's `events` field is built by string concatenation.
 * Consuming decodes a batch entry with one `JSON.parse`.
 */
import type { EventEnvelope } from '../../src/envelope.js';
import type { OutgoingEvent } from '../../src/transport.js';

export const WIRE_VERSION = '1';

/** `{"id":"...","time":1,"data":...}` plus optional fields: one event inside a batch entry. */
export function encodeEventJson(ev: OutgoingEvent): string {
  let s = '{"id":"' + ev.id + '","time":' + ev.time + ',"data":' + (ev.json ?? JSON.stringify(ev.data));
  if (ev.key !== undefined) s += ',"key":' + JSON.stringify(ev.key);
  if (ev.correlationId !== undefined) s += ',"correlationId":' + JSON.stringify(ev.correlationId);
  if (ev.causationId !== undefined) s += ',"causationId":' + JSON.stringify(ev.causationId);
  if (ev.headers !== undefined) s += ',"headers":' + JSON.stringify(ev.headers);
  return s + '}';
}

/** The `events` field of a batch entry: a JSON array of events of one type. */
export function encodeBatchPayload(events: readonly OutgoingEvent[]): string {
  const n = events.length;
  if (n === 0) return '[]';
  // Plain events (no key/ids/headers) are the common case: one concatenation each.
  let s = '[';
  for (let i = 0; i < n; i++) {
    const ev = events[i]!;
    if (i > 0) s += ',';
    if (ev.key === undefined && ev.correlationId === undefined && ev.causationId === undefined && ev.headers === undefined && ev.json !== undefined) {
      s += '{"id":"' + ev.id + '","time":' + ev.time + ',"data":' + ev.json + '}';
    } else {
      s += encodeEventJson(ev);
    }
  }
  return s + ']';
}

/** Field/value pairs of a batch entry. */
export function batchFields(type: string, source: string, events: readonly OutgoingEvent[]): string[] {
  return ['v', WIRE_VERSION, 'kind', 'batch', 'type', type, 'source', source, 'count', String(events.length), 'events', encodeBatchPayload(events)];
}

/** Appends the field/value pairs of a per-event entry to `out`. */
export function pushEventFields(out: (string | number)[], ev: OutgoingEvent, source: string): void {
  out.push('v', WIRE_VERSION, 'kind', 'event', 'id', ev.id, 'type', ev.type, 'source', source, 'time', ev.time, 'data', ev.json ?? JSON.stringify(ev.data));
  if (ev.key !== undefined) out.push('key', ev.key);
  if (ev.correlationId !== undefined) out.push('correlationId', ev.correlationId);
  if (ev.causationId !== undefined) out.push('causationId', ev.causationId);
  if (ev.headers !== undefined) out.push('headers', JSON.stringify(ev.headers));
}

/** Field/value pairs of an envelope as a per-event entry (retry and replay entries). */
export function envelopeFields(env: EventEnvelope): string[] {
  const out = ['v', WIRE_VERSION, 'kind', 'event', 'id', env.id, 'type', env.type, 'source', env.source, 'time', String(env.time), 'data', JSON.stringify(env.data)];
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
 */
export function decodeEntry(streamId: string, fields: readonly string[] | null, fallbackType: string): DecodedEntry | Malformed {
  if (fields === null || fields === undefined) return new Malformed('entry has no fields');
  let v: string | undefined;
  let kind: string | undefined;
  let type: string | undefined;
  let source: string | undefined;
  let events: string | undefined;
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
      case 'v': v = val; break;
      case 'kind': kind = val; break;
      case 'type': type = val; break;
      case 'source': source = val; break;
      case 'events': events = val; break;
      case 'id': id = val; break;
      case 'time': time = val; break;
      case 'data': data = val; break;
      case 'key': key = val; break;
      case 'correlationId': correlationId = val; break;
      case 'causationId': causationId = val; break;
      case 'headers': headers = val; break;
      case 'attempt': attempt = val; break;
      case 'due': due = val; break;
      default: break;
    }
  }
  if (v !== undefined && v !== WIRE_VERSION) return new Malformed(`unsupported wire version "${v}" (this reader knows ${WIRE_VERSION})`);
  const t = type ?? fallbackType;
  const src = source ?? '';
  const att = attempt === undefined ? 1 : Number(attempt);
  if (!Number.isInteger(att) || att < 1) return new Malformed(`field "attempt" is not a positive integer: ${attempt}`);
  const dueMs = due === undefined ? 0 : Number(due);
  if (kind === 'batch') {
    if (events === undefined) return new Malformed('batch entry without field "events"');
    let arr: unknown;
    try {
      arr = JSON.parse(events);
    } catch (err) {
      return new Malformed(`field "events" is not JSON: ${(err as Error).message}`);
    }
    if (!Array.isArray(arr)) return new Malformed('field "events" is not a JSON array');
    for (let i = 0; i < arr.length; i++) {
      const e = arr[i] as { id?: unknown; type?: string; source?: string } | null;
      if (e === null || typeof e !== 'object' || typeof e.id !== 'string') return new Malformed(`events[${i}] is not an event object with a string "id"`);
      e.type = t;
      e.source = src;
    }
    return { events: arr as EventEnvelope[], attempt: att, due: dueMs };
  }
  if (kind !== undefined && kind !== 'event') return new Malformed(`unknown entry kind "${kind}"`);
  if (data === undefined) return new Malformed('entry has no field "data" (nor "events")');
  let value: unknown;
  try {
    value = JSON.parse(data);
  } catch (err) {
    return new Malformed(`field "data" is not JSON: ${(err as Error).message}`);
  }
  const env: { -readonly [K in keyof EventEnvelope]: EventEnvelope[K] } = {
    id: id ?? streamId,
    type: t,
    source: src,
    time: time === undefined ? idTime(streamId) : Number(time),
    data: value,
  };
  if (key !== undefined) env.key = key;
  if (correlationId !== undefined) env.correlationId = correlationId;
  if (causationId !== undefined) env.causationId = causationId;
  if (headers !== undefined) {
    try {
      env.headers = JSON.parse(headers) as Record<string, string>;
    } catch {
      return new Malformed('field "headers" is not JSON');
    }
  }
  return { events: [env], attempt: att, due: dueMs };
}

/** Fields array to a plain object (DLQ `raw`, diagnostics). */
export function fieldsToObject(fields: readonly string[] | null): Record<string, string> {
  const o: Record<string, string> = {};
  if (fields) for (let i = 0; i + 1 < fields.length; i += 2) o[fields[i]!] = fields[i + 1]!;
  return o;
}
