/**
 * Reading a stream entry's fields for decoding (wire format v1, docs/wire-format.md): `readEntryFields` picks
 * the fields the decoders know out of an XREADGROUP field list into one `EntryFields` record, reused by every
 * decode (decoding is synchronous and a decoder is done with the record before it returns). Also the value
 * every decoder returns instead of throwing (`Malformed`), what it returns on success (`DecodedEntry`) and
 * the JSON checks the per-event and batch decoders share.
 */
import type { EventEnvelope } from '../../src/envelope.js';

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

/** An envelope being built by a decoder. */
export type MutableEnvelope = { -readonly [K in keyof EventEnvelope]: EventEnvelope[K] };

/**
 * The known fields of one entry, each undefined when the entry has none: the wire's (`v`, `kind`, `type`,
 * `source`), a batch entry's (`payloads` ... `meta`), a per-event entry's (`id` ... `headers`; `dataVersion` is
 * either's) and a retry
 * entry's (`attempt`, `due`). A field given twice holds its last value.
 */
export class EntryFields {
  v: string | undefined = undefined;
  kind: string | undefined = undefined;
  type: string | undefined = undefined;
  source: string | undefined = undefined;
  payloads: string | undefined = undefined;
  count: string | undefined = undefined;
  idw: string | undefined = undefined;
  ids: string | undefined = undefined;
  times: string | undefined = undefined;
  meta: string | undefined = undefined;
  id: string | undefined = undefined;
  time: string | undefined = undefined;
  data: string | undefined = undefined;
  key: string | undefined = undefined;
  correlationId: string | undefined = undefined;
  causationId: string | undefined = undefined;
  headers: string | undefined = undefined;
  dataVersion: string | undefined = undefined;
  attempt: string | undefined = undefined;
  due: string | undefined = undefined;

  /** Every field back to undefined (also so the record holds no entry's strings between decodes). */
  clear(): void {
    this.v = this.kind = this.type = this.source = undefined;
    this.payloads = this.count = this.idw = this.ids = this.times = this.meta = undefined;
    this.id = this.time = this.data = this.key = this.correlationId = this.causationId = this.headers = this.dataVersion = undefined;
    this.attempt = this.due = undefined;
  }
}

/** The one record `readEntryFields` fills. */
const scratch = new EntryFields();

/**
 * The known fields of `fields` ([f1, v1, f2, v2, ...]) in the shared record, cleared first; the caller clears
 * it again when done. `attempt` and `due` are read only from a retry stream (`retryStream`), where the
 * consumers write them: in a partition stream they are another producer's fields.
 */
export function readEntryFields(fields: readonly string[], retryStream: boolean): EntryFields {
  const f = scratch;
  f.clear();
  for (let i = 0; i + 1 < fields.length; i += 2) {
    const val = fields[i + 1]!;
    switch (fields[i]) {
      case 'v':
        f.v = val;
        break;
      case 'kind':
        f.kind = val;
        break;
      case 'type':
        f.type = val;
        break;
      case 'source':
        f.source = val;
        break;
      case 'payloads':
        f.payloads = val;
        break;
      case 'count':
        f.count = val;
        break;
      case 'idw':
        f.idw = val;
        break;
      case 'ids':
        f.ids = val;
        break;
      case 'times':
        f.times = val;
        break;
      case 'meta':
        f.meta = val;
        break;
      default:
        readEventField(f, fields[i]!, val, retryStream);
        break;
    }
  }
  return f;
}

/** A per-event or retry entry's field `name` into `f`; other names are ignored. */
function readEventField(f: EntryFields, name: string, val: string, retryStream: boolean): void {
  switch (name) {
    case 'id':
      f.id = val;
      break;
    case 'time':
      f.time = val;
      break;
    case 'data':
      f.data = val;
      break;
    case 'key':
      f.key = val;
      break;
    case 'correlationId':
      f.correlationId = val;
      break;
    case 'causationId':
      f.causationId = val;
      break;
    case 'headers':
      f.headers = val;
      break;
    case 'dataVersion':
      f.dataVersion = val;
      break;
    case 'attempt':
      if (retryStream) f.attempt = val;
      break;
    case 'due':
      if (retryStream) f.due = val;
      break;
    default:
      break;
  }
}

/** `text` parsed as JSON, or `Malformed` naming `field`. */
export function parseJson(field: string, text: string): unknown | Malformed {
  try {
    return JSON.parse(text);
  } catch (err) {
    return new Malformed(`field "${field}" is not JSON: ${(err as Error).message}`);
  }
}

/** Whether `v` is a JSON object (not an array) whose values are all strings: headers. */
export function isStringMap(v: unknown): v is Record<string, string> {
  if (v === null || typeof v !== 'object' || Array.isArray(v)) return false;
  for (const k in v) if (typeof (v as Record<string, unknown>)[k] !== 'string') return false;
  return true;
}
