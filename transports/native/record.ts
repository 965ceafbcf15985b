/**
 * Record codec of the native transport. A record is one JSON array followed by a comma:
 * `["<id>",<time>,<extras|0>,<data json>],` — so a popped batch (records back to back, batches separated by
 * a space) decodes with a single `JSON.parse('[' + batch.slice(0, -1) + ']')`. `extras` carries key,
 * correlation/causation ids and headers only when present. The payload JSON is the bus's encoding, reused.
 */
import type { EventEnvelope } from '../../src/envelope.js';
import type { OutgoingEvent } from '../../src/transport.js';

/** A batch of records ready for `PartitionCore.push`. */
export interface EncodedBatch {
  text: string;
  lens: Uint32Array;
  n: number;
  totalChars: number;
}

let lensBuf = new Uint32Array(4096);

export function encodeEvents(events: readonly OutgoingEvent[]): EncodedBatch {
  const n = events.length;
  if (lensBuf.length < n) lensBuf = new Uint32Array(Math.max(n, lensBuf.length * 2));
  const lens = lensBuf;
  let text = '';
  for (let i = 0; i < n; i++) {
    const r = encodeEvent(events[i]!);
    lens[i] = r.length;
    text += r;
  }
  return { text, lens, n, totalChars: text.length };
}

function encodeEvent(ev: OutgoingEvent): string {
  let extras = '0';
  if (ev.key !== undefined || ev.correlationId !== undefined || ev.causationId !== undefined || ev.headers !== undefined) {
    extras = JSON.stringify({ k: ev.key, c: ev.correlationId, x: ev.causationId, h: ev.headers });
  }
  const json = ev.json ?? JSON.stringify(ev.data);
  return '["' + ev.id + '",' + ev.time + ',' + extras + ',' + json + '],';
}

/** Re-encodes envelopes (events handed back to the group after a consumer left). */
export function encodeEnvelopes(envs: readonly EventEnvelope[]): EncodedBatch {
  return encodeEvents(
    envs.map((e) => ({
      id: e.id,
      type: e.type,
      time: e.time,
      key: e.key,
      data: e.data,
      json: JSON.stringify(e.data),
      partition: 0,
      correlationId: e.correlationId,
      causationId: e.causationId,
      headers: e.headers,
    })),
  );
}

interface Extras {
  k?: string;
  c?: string;
  x?: string;
  h?: Record<string, string>;
}

type RawRecord = [string, number, Extras | 0, unknown];

/** Decodes a popped batch into envelopes, appending to `out`. */
export function decodeBatch(batch: string, type: string, source: string, out: EventEnvelope[]): void {
  const raw = JSON.parse('[' + batch.slice(0, -1) + ']') as RawRecord[];
  for (let i = 0; i < raw.length; i++) {
    const r = raw[i]!;
    const x = r[2];
    if (x === 0) {
      out.push({ id: r[0], type, source, time: r[1], data: r[3] });
    } else {
      const env: { -readonly [K in keyof EventEnvelope]: EventEnvelope[K] } = { id: r[0], type, source, time: r[1], data: r[3] };
      if (x.k !== undefined) env.key = x.k;
      if (x.c !== undefined) env.correlationId = x.c;
      if (x.x !== undefined) env.causationId = x.x;
      if (x.h !== undefined) env.headers = x.h;
      out.push(env);
    }
  }
}
