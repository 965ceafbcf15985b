/**
 * A consumer group's lag and pending in events, not stream entries, over a type's partitions: what
 * `bus.groupCounts()` and `admin.groups()` report. A batch entry holds `count` events (docs/wire-format.md), so
 * Redis's entry counts are turned into events by reading entries: per partition stream and count (undelivered,
 * pending) at most `SAMPLE_ENTRIES` entries, and no more once `SAMPLE_BYTES` of them were read. A Lua script
 * reads them and returns only the sums (the entries never cross the network); where the server refuses scripts,
 * XRANGE pages are read instead. Past that bound, the entries not read count the mean events per entry of
 * those read (`estimated`). A retry stream holds one event per entry: its counts are Redis's own.
 */
import type { Client } from './connection.js';
import { groupCounts, groupPositions, pairs, type GroupPosition } from './group-lag.js';
import { retryKey, streamKey } from './keys.js';
import { Script } from './scripts.js';

/** Most entries read per partition stream and count. */
export const SAMPLE_ENTRIES = 100;
/** Entries stop being read once their fields add up to this many bytes (one large entry is read whole). */
export const SAMPLE_BYTES = 1024 * 1024;
/** Entries per XRANGE page where the server refuses scripts. */
const PAGE = 10;

/** A group's counts in events; `estimated` when a count was extrapolated past the sample. */
export interface GroupEvents {
  /** Events not yet delivered to the group: in the partition streams after its last delivered entry, and in its retry streams. */
  lagEvents: number | undefined;
  /** Events of entries delivered and not acked (retry streams included: retries waiting for their due time). */
  pendingEvents: number | undefined;
  estimated: boolean;
}

/** What the admin lends: its command connection, key prefix and typed error handling. */
export interface EventsIo {
  readonly client: Client;
  readonly prefix: string;
  /** `reply`, its failure as a typed error naming `command`. */
  typed<T>(reply: Promise<T>, command: string): Promise<T>;
  /** `reply`, or `fallback` when Redis says the stream or group is not there. */
  unlessMissing<T, F>(reply: Promise<T>, fallback: F, command: string): Promise<T | F>;
}

/** Entries read, their events, and whether every entry asked for was read (no bound was reached). */
interface Sample {
  entries: number;
  events: number;
  bytes: number;
  complete: boolean;
}

/** A count in events, or undefined where it cannot be told. */
interface Count {
  events: number | undefined;
  estimated: boolean;
}

const ZERO: Count = { events: 0, estimated: false };

/**
 * KEYS[1] the stream; ARGV: mode, most entries, most bytes, then `after`: the exclusive start (`(<id>`), or
 * `ids`: the entry ids. Returns { entries read, their events, 1 when nothing was left unread }.
 */
const SAMPLE_SCRIPT = new Script(`
local maxEntries, maxBytes = tonumber(ARGV[2]), tonumber(ARGV[3])
local entries, events, bytes = 0, 0, 0
local function add(fields)
  local kind, count = nil, nil
  for i = 1, #fields, 2 do
    bytes = bytes + #fields[i + 1]
    if fields[i] == 'kind' then kind = fields[i + 1] elseif fields[i] == 'count' then count = tonumber(fields[i + 1]) end
  end
  if kind == 'batch' and count ~= nil and count >= 1 then events = events + math.floor(count) else events = events + 1 end
end
if ARGV[1] == 'after' then
  local start = ARGV[4]
  while entries < maxEntries and bytes < maxBytes do
    local page = redis.call('XRANGE', KEYS[1], start, '+', 'COUNT', 1)
    if #page == 0 then return { entries, events, 1 } end
    entries = entries + 1
    add(page[1][2])
    start = '(' .. page[1][1]
  end
  return { entries, events, 0 }
end
for i = 4, #ARGV do
  if entries >= maxEntries or bytes >= maxBytes then return { entries, events, 0 } end
  local e = redis.call('XRANGE', KEYS[1], ARGV[i], ARGV[i])
  entries = entries + 1
  if #e > 0 then add(e[1][2]) end
end
return { entries, events, 1 }
`);

/** Events of one entry's fields: a batch entry's `count`, else 1 (a per-event entry, a foreign producer's). */
function eventsOf(fields: readonly string[]): number {
  const f = pairs(fields as unknown[]);
  const count = Number(f['count']);
  return f['kind'] === 'batch' && Number.isFinite(count) && count >= 1 ? Math.floor(count) : 1;
}

function bytesOf(fields: readonly string[]): number {
  let n = 0;
  for (let i = 1; i < fields.length; i += 2) n += fields[i]!.length;
  return n;
}

type RawEntries = [string, string[]][];
type Loose = Record<string, (...args: (string | number)[]) => Promise<unknown>>;

/** The sample without a script: XRANGE pages (after `start`), or each id, until a bound is reached. */
async function sampleByCommands(io: EventsIo, key: string, mode: 'after' | 'ids', args: readonly string[]): Promise<Sample> {
  const c = io.client as unknown as Loose;
  const s: Sample = { entries: 0, events: 0, bytes: 0, complete: false };
  const take = (fields: string[] | undefined): void => {
    s.entries++;
    if (fields === undefined) return;
    s.events += eventsOf(fields);
    s.bytes += bytesOf(fields);
  };
  let start = args[0]!;
  for (let at = 0; s.entries < SAMPLE_ENTRIES && s.bytes < SAMPLE_BYTES; at += PAGE) {
    if (mode === 'after') {
      const page = (await io.typed(c.xrange!(key, start, '+', 'COUNT', Math.min(PAGE, SAMPLE_ENTRIES - s.entries)), `XRANGE ${key}`)) as RawEntries;
      for (const [, fields] of page) take(fields);
      if (page.length === 0) return { ...s, complete: true };
      start = `(${page[page.length - 1]![0]}`;
    } else {
      if (at >= args.length) return { ...s, complete: true };
      const ids = args.slice(at, Math.min(at + PAGE, args.length, at + SAMPLE_ENTRIES - s.entries));
      const found = await Promise.all(ids.map((id) => io.typed(c.xrange!(key, id, id) as Promise<RawEntries>, `XRANGE ${key}`)));
      for (const entry of found) take(entry[0]?.[1]);
    }
  }
  return s;
}

/** Entries of stream `key` (after an exclusive start, or by id) read up to the bounds, and their events. */
async function sample(io: EventsIo, key: string, mode: 'after' | 'ids', args: readonly string[]): Promise<Sample> {
  const reply = await io.typed(
    SAMPLE_SCRIPT.runOr(io.client, key, [mode, SAMPLE_ENTRIES, SAMPLE_BYTES, ...args], () => sampleByCommands(io, key, mode, args)),
    `EVALSHA (event count) ${key}`,
  );
  if (!Array.isArray(reply)) return reply as Sample;
  const [entries, events, complete] = (reply as unknown[]).map(Number) as [number, number, number];
  return { entries, events, bytes: 0, complete: complete === 1 };
}

/**
 * Events of `total` entries (undefined: Redis cannot tell) of which `s` read the first: exact when the sample
 * read them all, else the entries not read count the mean events per entry read.
 */
function extrapolate(s: Sample, total: number | undefined): Count {
  if (s.complete || (total !== undefined && s.entries >= total)) return { events: s.events, estimated: false };
  if (total === undefined || s.entries === 0) return { events: undefined, estimated: false };
  return { events: s.events + Math.round(((total - s.entries) * s.events) / s.entries), estimated: true };
}

/** Events in entries of the partition stream not yet delivered to the group. */
async function undelivered(io: EventsIo, key: string, row: GroupPosition): Promise<Count> {
  if (row.caughtUp || row.lag === 0) return ZERO;
  return extrapolate(await sample(io, key, 'after', [`(${row.lastDelivered}`]), row.lag);
}

/** Events in entries of the partition stream delivered to the group and not acked (a trimmed one holds none). */
async function pending(io: EventsIo, key: string, group: string, entries: number): Promise<Count> {
  if (entries === 0) return ZERO;
  const c = io.client as unknown as Loose;
  const rows = (await io.unlessMissing(c.xpending!(key, group, '-', '+', SAMPLE_ENTRIES), [], `XPENDING ${key}`)) as [string, ...unknown[]][];
  if (rows.length === 0) return ZERO;
  const s = await sample(
    io,
    key,
    'ids',
    rows.map((r) => String(r[0])),
  );
  return extrapolate({ ...s, complete: s.complete && rows.length < SAMPLE_ENTRIES }, entries);
}

/** The group's retry stream: entries (one event each) not yet delivered, and delivered and not acked. */
async function retries(io: EventsIo, rk: string, group: string): Promise<{ lag: number; pending: number }> {
  const own = (await io.unlessMissing(groupCounts(io.client, rk), [], `XINFO GROUPS ${rk}`)).find((r) => r.group === group);
  if (own !== undefined && own.lag !== undefined) return { lag: own.lag, pending: own.pending };
  // No group there yet (every entry waits for it), or Redis cannot count the lag (before 7.0): the length.
  const len = Number(await io.unlessMissing((io.client as unknown as Loose).xlen!(rk), 0, `XLEN ${rk}`));
  return { lag: Math.max(0, len - (own?.pending ?? 0)), pending: own?.pending ?? 0 };
}

/** One partition's counts for `group`: its stream (nothing when the stream or group is not there) and retry stream. */
async function partitionEvents(io: EventsIo, type: string, p: number, group: string): Promise<GroupEvents> {
  const key = streamKey(io.prefix, type, p);
  const row = (await io.unlessMissing(groupPositions(io.client, key), [], `XINFO GROUPS ${key}`)).find((r) => r.group === group);
  const [lag, held, retry] = await Promise.all([
    row === undefined ? ZERO : undelivered(io, key, row),
    row === undefined ? ZERO : pending(io, key, group, row.pending),
    retries(io, retryKey(io.prefix, type, p, group), group),
  ]);
  return {
    lagEvents: lag.events === undefined ? undefined : lag.events + retry.lag,
    pendingEvents: held.events === undefined ? undefined : held.events + retry.pending,
    estimated: lag.estimated || held.estimated,
  };
}

/** `group`'s counts in events over the `partitions` partitions of `type` (asked at once). */
export async function groupEvents(io: EventsIo, type: string, partitions: number, group: string): Promise<GroupEvents> {
  const parts = await Promise.all(Array.from({ length: partitions }, (_, p) => partitionEvents(io, type, p, group)));
  const sum = (a: number | undefined, b: number | undefined): number | undefined => (a === undefined || b === undefined ? undefined : a + b);
  return parts.reduce((a, b) => ({ lagEvents: sum(a.lagEvents, b.lagEvents), pendingEvents: sum(a.pendingEvents, b.pendingEvents), estimated: a.estimated || b.estimated }), {
    lagEvents: 0,
    pendingEvents: 0,
    estimated: false,
  });
}
