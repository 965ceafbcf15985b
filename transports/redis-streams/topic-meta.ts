/**
 * The record of an event type kept with its streams: `<prefix>:{<type>:0}:meta`, a string holding
 * `{"v":<wire format version>,"partitions":<count>}` (docs/wire-format.md). It sits in the slot of the type's
 * partition 0, so it is one key on Cluster as everywhere. The first bus to use the type writes it (`SET NX`: of
 * two buses starting together, one writes and the other reads what it wrote); a count is raised only by
 * `raiseRecorded` (a script: read, compare and write in one step), never lowered.
 */
import { ConfigError, TransportError } from '../../src/errors.js';
import type { Client } from './connection.js';
import { streamKey } from './keys.js';
import { Script } from './scripts.js';

/** The wire format version this transport writes and reads (docs/wire-format.md). */
export const WIRE_VERSION = 1;

export function metaKey(prefix: string, type: string): string {
  return `${streamKey(prefix, type, 0)}:meta`;
}

export function encodeMeta(partitions: number): string {
  return JSON.stringify({ v: WIRE_VERSION, partitions });
}

/** The count a record holds; undefined for no record. A record this transport cannot use is a typed error. */
export function decodeMeta(key: string, raw: string | null | undefined): number | undefined {
  if (raw === null || raw === undefined) return undefined;
  let parsed: { v?: unknown; partitions?: unknown } | undefined;
  try {
    parsed = JSON.parse(raw) as typeof parsed;
  } catch {
    parsed = undefined;
  }
  const n = parsed?.partitions;
  if (typeof n !== 'number' || !Number.isInteger(n) || n < 1) throw new TransportError(`${key} holds no partition count: ${JSON.stringify(raw.slice(0, 200))}`);
  if (parsed?.v !== WIRE_VERSION) {
    throw new ConfigError(`${key} says its type is written in wire format version ${String(parsed?.v)}; this eventlane reads and writes version ${WIRE_VERSION} only`);
  }
  return n;
}

type Loose = Record<string, (...args: (string | number)[]) => Promise<unknown>>;

/** The recorded count of `type`, or undefined when none is recorded. */
export async function readRecorded(client: Client, prefix: string, type: string): Promise<number | undefined> {
  const key = metaKey(prefix, type);
  return decodeMeta(key, (await (client as unknown as Loose).get!(key)) as string | null);
}

/** Records `partitions` for `type` unless a count is recorded already; the count recorded either way. */
export async function recordUnlessRecorded(client: Client, prefix: string, type: string, partitions: number): Promise<number> {
  const key = metaKey(prefix, type);
  const c = client as unknown as Loose;
  const set = await c.set!(key, encodeMeta(partitions), 'NX');
  if (set === 'OK') return partitions;
  // A record deleted between the two commands is written again by the next SET NX (a bus, a housekeeping read).
  return decodeMeta(key, (await c.get!(key)) as string | null) ?? partitions;
}

/** Returns the count recorded before, as a string ('' for none); writes ARGV[2] unless that count is above ARGV[1]. */
const RAISE = new Script(`
local cur = redis.call('GET', KEYS[1])
if cur then
  local ok, rec = pcall(cjson.decode, cur)
  if ok and type(rec) == 'table' and tonumber(rec.partitions) and tonumber(rec.partitions) > tonumber(ARGV[1]) then return tostring(rec.partitions) end
end
redis.call('SET', KEYS[1], ARGV[2])
if cur then return cur end
return ''
`);

/**
 * Raises the recorded count of `type` to `partitions` (records it when there is none); resolves with the count
 * recorded before (undefined for none). A lower count than the recorded one is refused with a ConfigError,
 * nothing changed. Where Redis refuses scripts, a read and a write (not one step).
 */
export async function raiseRecorded(client: Client, prefix: string, type: string, partitions: number): Promise<number | undefined> {
  const key = metaKey(prefix, type);
  const c = client as unknown as Loose;
  const value = encodeMeta(partitions);
  const reply = await RAISE.runOr(client, key, [partitions, value], async () => {
    const cur = (await c.get!(key)) as string | null;
    const n = decodeMeta(key, cur);
    if (n !== undefined && n > partitions) return String(n);
    await c.set!(key, value);
    return cur ?? '';
  });
  const text = String(reply);
  if (text === '') return undefined;
  const before = /^\d+$/.test(text) ? Number(text) : decodeMeta(key, text)!;
  if (before > partitions) {
    throw new ConfigError(`Cannot lower the partitions of "${type}" from ${before} to ${partitions}: a type's partition count can only be raised (${key})`, [
      { path: ['partitions'], message: `below the recorded ${before}`, code: 'custom' },
    ]);
  }
  return before;
}
