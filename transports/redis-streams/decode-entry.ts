/**
 * Decoding a stream entry (wire format v1, docs/wire-format.md) into envelopes: `decodeEntry` reads the
 * fields, checks what every entry shares (wire version, type, a retry entry's attempt and due), then hands a
 * batch entry to decode-batch.ts and decodes a per-event entry here. A malformed entry comes back as
 * `Malformed` with the reason; nothing here throws for bad input.
 */
import { parseJsonSlice, type JsonReader } from '../../src/json-reader.js';
import { WIRE_VERSION } from './codec.js';
import { isDataVersion, withVersion } from './data-version.js';
import { decodeBatch } from './decode-batch.js';
import { isStringMap, Malformed, parseJson, readEntryFields, type DecodedEntry, type EntryFields, type MutableEnvelope } from './entry-fields.js';

export { Malformed, type DecodedEntry } from './entry-fields.js';

/** A per-event entry's `time`: ms since the epoch, in decimal. */
const TIME_MS = /^\d{1,16}(\.\d+)?$/;

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
  const f = readEntryFields(fields, retryStream);
  const decoded = decodeFields(f, streamId, fallbackType, readData);
  f.clear();
  return decoded;
}

/** The entry whose fields are `f`, by its kind. */
function decodeFields(f: EntryFields, streamId: string, fallbackType: string, readData: JsonReader): DecodedEntry | Malformed {
  if (f.v !== undefined && f.v !== WIRE_VERSION) return new Malformed(`unsupported wire version "${f.v}" (this reader knows ${WIRE_VERSION})`);
  // A stream holds one type: an entry naming another would reach handlers typed for this one.
  if (f.type !== undefined && f.type !== fallbackType) return new Malformed(`field "type" is "${f.type}", not the stream's type "${fallbackType}"`);
  const src = f.source ?? '';
  const att = f.attempt === undefined ? 1 : Number(f.attempt);
  if (!Number.isInteger(att) || att < 1) return new Malformed(`field "attempt" is not a positive integer: ${f.attempt}`);
  const dueMs = f.due === undefined ? 0 : Number(f.due);
  if (f.dataVersion !== undefined && !isDataVersion(f.dataVersion)) return new Malformed(`field "dataVersion" is not a positive integer: "${f.dataVersion}"`);
  if (f.kind === 'batch') return decodeBatch(f, fallbackType, src, att, dueMs);
  if (f.kind !== undefined && f.kind !== 'event') return new Malformed(`unknown entry kind "${f.kind}"`);
  return decodeEvent(f, streamId, fallbackType, src, att, dueMs, readData);
}

/** A per-event entry (kind `event`, or no kind: a foreign producer's). */
function decodeEvent(f: EntryFields, streamId: string, type: string, source: string, attempt: number, due: number, readData: JsonReader): DecodedEntry | Malformed {
  const data = f.data;
  if (data === undefined) return new Malformed('entry has no field "data" (nor "payloads")');
  let value: unknown;
  try {
    value = readData(data, 0, data.length);
  } catch (err) {
    return new Malformed(`field "data" is not JSON: ${(err as Error).message}`);
  }
  const time = f.time;
  // Decimal digits only: Number() takes '' (0), '0x10' and ' 5 ' too.
  if (time !== undefined && !TIME_MS.test(time)) return new Malformed(`field "time" is not a time in ms: "${time}"`);
  const at = time === undefined ? idTime(streamId) : Number(time);
  if (f.id === '') return new Malformed('field "id" is empty (omit it to take the stream entry id)');
  const env: MutableEnvelope = {
    id: f.id ?? streamId,
    type,
    source,
    time: at,
    data: value,
  };
  if (f.key !== undefined) env.key = f.key;
  if (f.correlationId !== undefined) env.correlationId = f.correlationId;
  if (f.causationId !== undefined) env.causationId = f.causationId;
  if (f.headers !== undefined) {
    const headers = parseHeaders(f.headers);
    if (headers instanceof Malformed) return headers;
    env.headers = headers;
  }
  if (f.dataVersion !== undefined) env.headers = withVersion(env.headers, f.dataVersion);
  return { events: [env], attempt, due };
}

/** A per-event entry's `headers`: a JSON object of strings. */
function parseHeaders(text: string): Record<string, string> | Malformed {
  const parsed = parseJson('headers', text);
  if (parsed instanceof Malformed) return parsed;
  if (!isStringMap(parsed)) return new Malformed('field "headers" is not a JSON object of strings');
  return parsed;
}
