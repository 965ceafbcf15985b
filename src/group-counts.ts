/**
 * Where consumer groups stand, in events: what `bus.groupCounts()` returns and what a transport's optional
 * `groupCounts` (src/transport.ts) reports. The bus asks for the groups it subscribes, and any the caller
 * names, with each type's partition count.
 */
import { ConfigError, UnknownEventError } from './errors.js';
import type { Transport } from './transport.js';

/** A consumer group a transport is asked about. */
export interface GroupTarget {
  readonly type: string;
  readonly group: string;
  /** Partitions of the type (`Transport.partitionsFor`). */
  readonly partitions: number;
}

/**
 * Where one consumer group of one event type stands, in events (a transport that stores many events per entry
 * counts the events). `undefined`: the transport cannot tell.
 */
export interface GroupCounts {
  readonly type: string;
  readonly group: string;
  /** Events written and not yet delivered to any member of the group (its backlog). */
  readonly lagEvents: number | undefined;
  /** Events delivered to a member and not finished: being handled, or waiting for another attempt. */
  readonly pendingEvents: number | undefined;
  /** Set where a count was extrapolated from a sample (redis-streams past its sample bound). */
  readonly estimated?: boolean;
}

/** Options of `bus.groupCounts()`. */
export interface GroupCountsOptions<K extends string = string> {
  /** Groups to count besides those the bus subscribes (each once). @default [] */
  groups?: readonly { type: K; group: string }[] | undefined;
}

/**
 * The counts of `subscribed` and `named` groups (each (type, group) once, subscribed first), from the
 * transport; `undefined` counts for every group when the transport cannot tell (no `groupCounts`).
 */
export async function readGroupCounts(
  transport: Transport,
  partitionsOf: ReadonlyMap<string, { readonly partitions: number }>,
  subscribed: Iterable<{ readonly type: string; readonly group: string }>,
  options: GroupCountsOptions | undefined,
): Promise<GroupCounts[]> {
  const targets = new Map<string, GroupTarget>();
  const add = (type: string, group: string): void => {
    const t = partitionsOf.get(type);
    if (t === undefined) throw new UnknownEventError(type, [...partitionsOf.keys()]);
    targets.set(JSON.stringify([type, group]), { type, group, partitions: t.partitions });
  };
  for (const s of subscribed) add(s.type, s.group);
  for (const g of namedGroups(options)) add(g.type, g.group);
  const list = [...targets.values()];
  if (list.length === 0) return [];
  if (transport.groupCounts === undefined) return list.map((t) => ({ type: t.type, group: t.group, lagEvents: undefined, pendingEvents: undefined }));
  return transport.groupCounts(list);
}

/** `options.groups`, checked: a `ConfigError` names what is wrong. */
function namedGroups(options: GroupCountsOptions | undefined): readonly { type: string; group: string }[] {
  if (options === undefined) return [];
  if (options === null || typeof options !== 'object') throw new ConfigError('groupCounts() expects an options object: { groups?: [{ type, group }] }.');
  const groups = options.groups;
  if (groups === undefined) return [];
  if (!Array.isArray(groups)) throw new ConfigError('groupCounts(): groups must be an array of { type, group }.', [{ path: ['groups'], message: 'not an array' }]);
  groups.forEach((g: unknown, i) => {
    const o = g as { type?: unknown; group?: unknown } | null;
    if (o === null || typeof o !== 'object' || typeof o.type !== 'string' || typeof o.group !== 'string' || o.group === '') {
      throw new ConfigError(`groupCounts(): groups[${i}] must be { type: string, group: non-empty string }.`, [{ path: ['groups', i], message: 'not { type, group }' }]);
    }
  });
  return groups;
}
