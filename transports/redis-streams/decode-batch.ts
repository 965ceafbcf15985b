/**
 * Decoding batch entries (wire format v1, kind `batch`; docs/wire-format.md): one JSON.parse of `payloads`,
 * the ids sliced from one string (or one JSON array), the times from a short run list and the optional
 * per-event `meta`, and the `dataVersion` of all its events (checked by decode-entry.ts). Every field is checked before any envelope is built: a bad field makes the whole entry
 * `Malformed`, never part of it.
 */
import type { EventEnvelope } from '../../src/envelope.js';
import { withVersion } from './data-version.js';
import { isStringMap, Malformed, parseJson, type DecodedEntry, type EntryFields, type MutableEnvelope } from './entry-fields.js';

type MetaFields = { key?: string; correlationId?: string; causationId?: string; headers?: Record<string, string> };

/** A batch entry's events from its fields `f`, all of one `type`, `source`, `attempt` and `due`. */
export function decodeBatch(f: EntryFields, type: string, source: string, attempt: number, due: number): DecodedEntry | Malformed {
  if (f.payloads === undefined) return new Malformed('batch entry without field "payloads"');
  const idsText = f.ids;
  if (idsText === undefined || f.times === undefined) return new Malformed('batch entry without field "ids" or "times"');
  const data = parseJson('payloads', f.payloads);
  if (data instanceof Malformed) return data;
  if (!Array.isArray(data)) return new Malformed('field "payloads" is not a JSON array');
  const n = data.length;
  if (f.count !== undefined && Number(f.count) !== n) return new Malformed(`field "count" says ${f.count} but "payloads" holds ${n}`);
  const idw = f.idw === undefined ? 0 : Number(f.idw);
  const idList = idw > 0 ? checkFixedIds(idsText, idw, n) : parseIdList(idsText, n);
  if (idList instanceof Malformed) return idList;
  const runs = parseTimes(f.times, n);
  if (runs instanceof Malformed) return runs;
  const meta = f.meta === undefined ? undefined : parseMeta(f.meta, n);
  if (meta instanceof Malformed) return meta;
  return { events: withDataVersion(buildEvents(data, type, source, idsText, idw, idList, runs, meta), f.dataVersion), attempt, due };
}

/** `events`, each with the version header of the entry's `dataVersion` (none: version 1, the events as they are). */
function withDataVersion(events: EventEnvelope[], version: string | undefined): EventEnvelope[] {
  if (version !== undefined) for (const e of events) (e as MutableEnvelope).headers = withVersion(e.headers, version);
  return events;
}

/** Ids of width `idw` concatenated: undefined (sliced as the events are built) if `n` of them fit exactly. */
function checkFixedIds(idsText: string, idw: number, n: number): undefined | Malformed {
  if (idsText.length !== idw * n) return new Malformed(`field "ids" has ${idsText.length} chars, expected ${n} x ${idw}`);
  return undefined;
}

/** Ids as a JSON array of `n` strings. */
function parseIdList(idsText: string, n: number): unknown[] | Malformed {
  const parsed = parseJson('ids', idsText);
  if (parsed instanceof Malformed) return parsed;
  if (!Array.isArray(parsed) || parsed.length !== n || !parsed.every((id) => typeof id === 'string')) return new Malformed(`field "ids" is not a JSON array of ${n} string ids`);
  return parsed;
}

/** `times`: a JSON `[time, count, ...]` run list whose counts add up to `n`. */
function parseTimes(timesText: string, n: number): unknown[] | Malformed {
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
  return runs;
}

/** `meta` parsed and checked (`checkMeta`). */
function parseMeta(metaText: string, n: number): Record<string, MetaFields> | Malformed {
  const parsed = parseJson('meta', metaText);
  if (parsed instanceof Malformed) return parsed;
  return checkMeta(parsed, n);
}

/**
 * A batch entry's `meta`: an object whose keys are indexes of its events and whose values hold only string
 * `key`, `correlationId` and `causationId`, and `headers` of strings (as a per-event entry's fields are checked).
 */
function checkMeta(v: unknown, n: number): Record<string, MetaFields> | Malformed {
  if (v === null || typeof v !== 'object' || Array.isArray(v)) return new Malformed('field "meta" is not a JSON object');
  for (const [index, m] of Object.entries(v)) {
    const i = Number(index);
    if (!Number.isInteger(i) || i < 0 || i >= n || String(i) !== index) return new Malformed(`field "meta" names event "${index}", not an index of the ${n} payloads`);
    const bad = checkEventMeta(index, m);
    if (bad !== undefined) return bad;
  }
  return v as Record<string, MetaFields>;
}

/** The `meta` of event `index`: undefined when it is an object of the known options' types. */
function checkEventMeta(index: string, m: unknown): Malformed | undefined {
  if (m === null || typeof m !== 'object' || Array.isArray(m)) return new Malformed(`field "meta" of event ${index} is not a JSON object`);
  for (const [name, value] of Object.entries(m as Record<string, unknown>)) {
    const ok = name === 'headers' ? isStringMap(value) : name === 'key' || name === 'correlationId' || name === 'causationId' ? typeof value === 'string' : true;
    if (!ok) return new Malformed(`field "meta" of event ${index}: "${name}" is not ${name === 'headers' ? 'a JSON object of strings' : 'a string'}`);
  }
  return undefined;
}

/** The envelopes of a checked batch entry: ids from `idList`, else `idw`-wide slices of `idsText`. */
function buildEvents(
  data: unknown[],
  type: string,
  source: string,
  idsText: string,
  idw: number,
  idList: unknown[] | undefined,
  runs: unknown[],
  meta: Record<string, MetaFields> | undefined,
): EventEnvelope[] {
  const n = data.length;
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
    const env: MutableEnvelope = { id, type, source, time, data: data[i] };
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
  return events;
}
