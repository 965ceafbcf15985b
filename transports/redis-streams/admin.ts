/**
 * Operations: list streams, groups, pending entries and lag; inspect, replay and purge dead letters; show and
 * raise a type's recorded partition count.
 * Available through the transport (`await transport.admin()`) and `openRedisStreamsAdmin(config)`.
 */
import { Cluster, type Redis } from 'ioredis';
import type { DeadLetter } from '../../src/transport.js';
import { envelopeFields } from './codec.js';
import type { ResolvedConfig } from './config.js';
import { ClosedError, ConfigError, ConnectionError, EventlaneError, TransportError } from '../../src/errors.js';
import { isConnectionProblem, type Client } from './connection.js';
import { groupCounts, groupPositions, type GroupPosition } from './group-lag.js';
import { groupEvents, type EventsIo, type GroupEvents } from './group-events.js';
import { dlqKey, parseStreamKey, retryKey, streamKey } from './keys.js';
import { decodeDeadLetter } from './dead-letter-decode.js';

export { decodeDeadLetter };
import { metaKey, raiseRecorded, readRecorded } from './topic-meta.js';

/** A dead letter as stored in Redis, with where it lives. */
export interface RedisDeadLetter extends DeadLetter {
  /** Id of the entry in its partition's DLQ stream: unique within that stream only. */
  readonly dlqId: string;
  /**
   * `<partition>/<dlqId>`: names this one letter (the DLQ streams of two partitions can hold entries with
   * the same id). Pass it in `ids` to replay or purge just this letter.
   */
  readonly ref: string;
  /** Stream the event was read from and its entry id there. */
  readonly stream: string;
  readonly origin: string;
}

export interface StreamInfo {
  key: string;
  type: string;
  partition: number;
  length: number;
}

/**
 * A consumer group of a type. `pending`, `lag` and `trimmed` count stream entries (a batch entry holds many
 * events); `retrying` counts retry-stream entries, one event each; `pendingEvents` and `lagEvents` count events
 * (`GroupEvents`, group-events.ts).
 */
export interface GroupInfo extends GroupEvents {
  group: string;
  /** Consumers known to the group (max over partitions). */
  consumers: number;
  /** Entries delivered but not acked, over all partitions (retry streams included). */
  pending: number;
  /** Entries in the partition streams not yet delivered to the group (undefined when Redis cannot tell: before 7.0). */
  lag: number | undefined;
  /**
   * Entries retention (`maxLen` / `minIdAgeMs`) removed before the group read them: events lost to this
   * group. Told only while the group is behind the oldest entry of a partition (group-lag.ts); undefined
   * when Redis cannot tell.
   */
  trimmed: number | undefined;
  /**
   * Entries (one event each) of the group's retry streams not finished: not delivered yet, or delivered and not
   * acked (waiting for their due time, or running; those are counted in `pending` too).
   */
  retrying: number;
  /** Every partition's newest entry was delivered to the group (whether or not `lag` can be told). */
  caughtUp: boolean;
}

export interface PendingInfo {
  total: number;
  consumers: Record<string, number>;
}

type Loose = Record<string, (...args: (string | number)[]) => Promise<unknown>>;

export class RedisStreamsAdmin {
  private readonly c: Loose;
  private readonly io: EventsIo;
  constructor(
    private readonly client: Client,
    private readonly config: ResolvedConfig,
    private readonly partitionsFor: (type: string) => number,
  ) {
    this.c = client as unknown as Loose;
    this.io = { client, prefix: config.prefix, typed: (r, command) => this.typed(r, command), unlessMissing: (r, fallback, command) => this.unlessMissing(r, fallback, command) };
  }

  /** The same admin over the same connection, with `type` taken to have `partitions` partitions. */
  withPartitions(type: string, partitions: number): RedisStreamsAdmin {
    return new RedisStreamsAdmin(this.client, this.config, (t) => (t === type ? partitions : this.partitionsFor(t)));
  }

  /** `reply`, its failure as a typed error naming `command` (the Redis error as `cause`). */
  private typed<T>(reply: Promise<T>, command: string): Promise<T> {
    return reply.catch((err: unknown) => {
      // Its connection closed (`close()` of openRedisStreamsAdmin, or the bus's): not a Redis outage.
      if (this.client.status === 'end') throw new ClosedError('redis-streams admin');
      throw adminError(command, err, this.client instanceof Cluster);
    });
  }

  /** `reply`, or `fallback` when Redis says the stream or group is not there; any other failure as `typed`. */
  private unlessMissing<T, F>(reply: Promise<T>, fallback: F, command: string): Promise<T | F> {
    const found = reply.catch((err: unknown) => {
      if (isMissing(err)) return fallback;
      throw err;
    });
    return this.typed(found, command);
  }

  private keys(type: string): number[] {
    return Array.from({ length: this.partitionsFor(type) }, (_, p) => p);
  }

  /** Partition streams under this prefix (SCAN; every master that owns slots in a cluster). */
  async listStreams(): Promise<StreamInfo[]> {
    const nodes = this.client instanceof Cluster ? await this.typed(slotOwners(this.client), 'CLUSTER SLOTS') : [this.client];
    const found = new Set<string>();
    for (const node of nodes) {
      let cursor = '0';
      do {
        // Streams only: another key of this shape (an app's `el:{user:42}`) failed XLEN with WRONGTYPE below.
        // The prefix's glob characters are escaped: `svc[1]` matched no key of its own.
        const match = `${globEscape(this.config.prefix)}:{*}`;
        const [next, keys] = (await this.typed(node.scan(cursor, 'MATCH', match, 'COUNT', 1000, 'TYPE', 'stream'), 'SCAN')) as [string, string[]];
        cursor = next;
        for (const k of keys) found.add(k);
      } while (cursor !== '0');
    }
    const out: StreamInfo[] = [];
    for (const key of found) {
      const parsed = parseStreamKey(this.config.prefix, key);
      if (!parsed) continue;
      out.push({ key, ...parsed, length: Number(await this.typed(this.c.xlen!(key), `XLEN ${key}`)) });
    }
    return out.sort((a, b) => (a.type === b.type ? a.partition - b.partition : a.type < b.type ? -1 : 1));
  }

  /** Consumer groups of a type with pending counts and lag summed over partitions, in entries and in events. */
  async groups(type: string): Promise<GroupInfo[]> {
    const groups = await this.collectGroups(type, undefined);
    return Promise.all(groups.map(async (g) => ({ ...g, ...(await this.groupEvents(type, g.group)) })));
  }

  /**
   * Where `group` stands in events, not entries: undelivered (`lagEvents`) and delivered not acked
   * (`pendingEvents`) over the partition and retry streams; past a sample of entries, `estimated` (group-events.ts).
   */
  groupEvents(type: string, group: string): Promise<GroupEvents> {
    return groupEvents(this.io, type, this.partitionsFor(type), group);
  }

  /**
   * `groups`, of every group or of `only` (whose retry streams alone are then asked). The partitions are
   * asked at once (then each group's retry stream, XINFO GROUPS): a poll of `idle()` costs about
   * three round trips whatever the partition count, not three per partition.
   */
  private async collectGroups(type: string, only: string | undefined): Promise<Omit<GroupInfo, keyof GroupEvents>[]> {
    const byName = new Map<string, Omit<GroupInfo, keyof GroupEvents>>();
    const partitions = await Promise.all(this.keys(type).map((p) => this.partitionGroups(type, p, only)));
    for (const rows of partitions) {
      for (const row of rows) {
        const g = byName.get(row.group) ?? { group: row.group, consumers: 0, pending: 0, lag: 0 as number | undefined, trimmed: 0 as number | undefined, retrying: 0, caughtUp: true };
        g.caughtUp &&= row.caughtUp;
        g.consumers = Math.max(g.consumers, row.consumers);
        g.pending += row.pending + row.retryPending;
        g.lag = g.lag === undefined || row.lag === undefined ? undefined : g.lag + row.lag;
        g.trimmed = g.trimmed === undefined || row.trimmed === undefined ? undefined : g.trimmed + row.trimmed;
        g.retrying += row.retrying;
        byName.set(row.group, g);
      }
    }
    return [...byName.values()];
  }

  /** One partition's groups (or `only`), each with the unfinished and pending entries of its retry stream. */
  private async partitionGroups(type: string, p: number, only: string | undefined): Promise<(GroupPosition & { retrying: number; retryPending: number })[]> {
    const key = streamKey(this.config.prefix, type, p);
    const rows = await this.unlessMissing(groupPositions(this.client, key), [], `XINFO GROUPS ${key}`); // none: no stream yet
    const wanted = only === undefined ? rows : rows.filter((r) => r.group === only);
    return Promise.all(
      wanted.map(async (row) => {
        // The group's place in its retry stream: what it holds (pending) and has not been delivered (lag). Not the
        // stream's length: an acked retry entry whose XDEL failed (or whose consumer died in between) stays in it
        // for good, and idle() then waited for it forever. No retry stream yet: 0.
        const rk = retryKey(this.config.prefix, type, p, row.group);
        const own = (await this.unlessMissing(groupCounts(this.client, rk), [], `XINFO GROUPS ${rk}`)).find((r) => r.group === row.group);
        if (own !== undefined && own.lag !== undefined) return { ...row, retrying: own.pending + own.lag, retryPending: own.pending };
        // No group there yet (every entry waits for it), or Redis cannot count the lag (before 7.0): the length.
        const len = Number(await this.unlessMissing(this.c.xlen!(rk), 0, `XLEN ${rk}`));
        return { ...row, retrying: len, retryPending: own?.pending ?? 0 };
      }),
    );
  }

  /**
   * `bus.idle()`: entries of `group` not finished over the type's partitions: not yet delivered (lag; where
   * Redis cannot count it, 1 until the group was delivered the newest entry), delivered and not acked
   * (pending), and waiting in the group's retry streams. Counted in stream entries (a batch entry carries many
   * events); 0 once the group has caught up. 0 for a group that does not exist.
   */
  async unfinished(type: string, group: string): Promise<number> {
    const rows = (await Promise.all(this.keys(type).map((p) => this.partitionGroups(type, p, group)))).flat();
    if (rows.length === 0) return 0;
    // A retry stream's pending entries are in `retrying` already.
    let n = 0;
    for (const row of rows) n += row.pending + row.retrying + (row.lag ?? (row.caughtUp ? 0 : 1));
    return n;
  }

  /** Pending (delivered, not acked) entries of a group, per consumer. */
  async pending(type: string, group: string): Promise<PendingInfo> {
    type Summary = [number, string | null, string | null, [string, string][] | null];
    const keys = this.keys(type).flatMap((p) => [streamKey(this.config.prefix, type, p), retryKey(this.config.prefix, type, p, group)]);
    // Every stream at once; one without the stream or the group there counts as nothing.
    const summaries = await Promise.all(keys.map((key) => this.unlessMissing(this.c.xpending!(key, group) as Promise<Summary>, undefined, `XPENDING ${key}`)));
    const out: PendingInfo = { total: 0, consumers: {} };
    for (const summary of summaries) {
      if (summary === undefined) continue;
      out.total += Number(summary[0]);
      for (const [name, n] of summary[3] ?? []) out.consumers[name] = (out.consumers[name] ?? 0) + Number(n);
    }
    return out;
  }

  /** The partition count recorded for `type` (docs/wire-format.md), or undefined when none is. */
  recordedPartitions(type: string): Promise<number | undefined> {
    return this.typed(readRecorded(this.client, this.config.prefix, type), `GET ${metaKey(this.config.prefix, type)}`);
  }

  /**
   * Raises the partition count recorded for `type` to `partitions` (records it when the type has none); resolves
   * with the count recorded before. Buses that set no partitions for the type use the new count from their next
   * connect; running ones follow within `partitionsCheckMs` (a subscription within its reclaim pass when that is
   * sooner), their consumers reading the new partitions from their start. A count below the recorded one is
   * refused with a ConfigError, nothing changed.
   * @example await admin.setPartitions('order.created', 8)
   */
  async setPartitions(type: string, partitions: number): Promise<{ from: number | undefined; partitions: number }> {
    if (!Number.isInteger(partitions) || partitions < 1 || partitions > 4096) {
      const message = `must be an integer from 1 to 4096 (got ${String(partitions)})`;
      throw new ConfigError(`setPartitions: partitions ${message}.`, [{ path: ['partitions'], message }]);
    }
    const raising = raiseRecorded(this.client, this.config.prefix, type, partitions);
    const from = await this.typed(raising, `setPartitions ${metaKey(this.config.prefix, type)}`).catch((err: unknown) => {
      throw (err as Error).cause instanceof EventlaneError ? (err as Error).cause : err;
    });
    return { from, partitions };
  }

  /** Dead letters of a type (optionally one group), oldest first. */
  async deadLetters(type: string, group?: string, limit = 1000): Promise<RedisDeadLetter[]> {
    if (!Number.isSafeInteger(limit) || limit < 1) {
      const message = `must be an integer of at least 1 (got ${String(limit)})`;
      throw new ConfigError(`deadLetters: limit ${message}.`, [{ path: ['limit'], message }]);
    }
    const all: RedisDeadLetter[] = [];
    for (const p of this.keys(type)) {
      const key = dlqKey(this.config.prefix, type, p);
      const rows = (await this.typed(this.c.xrange!(key, '-', '+', 'COUNT', group === undefined ? limit : 1_000_000), `XRANGE ${key}`)) as [string, string[]][];
      for (const [dlqId, fields] of rows) {
        const d = decodeDeadLetter(dlqId, fields, type, p);
        if (group === undefined || d.group === group) all.push(d);
      }
    }
    return all.sort((a, b) => a.deadAt - b.deadAt || (a.dlqId < b.dlqId ? -1 : 1)).slice(0, limit);
  }

  /**
   * Sends dead letters back to their group: each decodable letter becomes a fresh entry (attempt 1)
   * in that group's retry stream, so only that group sees it again; the letter is removed from the DLQ.
   * Returns how many were replayed. `ids` picks letters by `ref` (one letter) or by event id (that event's
   * letters, one per group that gave up on it; an undecodable letter has none: its `ref` only). Skipped: an
   * undecodable letter (inspect `raw` and purge instead), and one naming no group, or a group the partition's
   * stream no longer has (nothing would read its retry stream); `onSkip` hears of each, with the reason.
   */
  async replayDeadLetters(type: string, options: { group?: string; ids?: string[]; onSkip?: (letter: RedisDeadLetter, reason: ReplaySkipReason) => void } = {}): Promise<number> {
    const letters = await this.deadLetters(type, options.group, Number.MAX_SAFE_INTEGER);
    const wanted = options.ids ? new Set(options.ids) : undefined;
    const groupsOf = new Map<number, Promise<Set<string>>>();
    const hasGroup = (partition: number, group: string): Promise<boolean> => {
      let names = groupsOf.get(partition);
      if (names === undefined) {
        const key = streamKey(this.config.prefix, type, partition);
        names = this.unlessMissing(groupPositions(this.client, key), [], `XINFO GROUPS ${key}`).then((rows) => new Set(rows.map((r) => r.group)));
        groupsOf.set(partition, names);
      }
      return names.then((set) => set.has(group));
    };
    let n = 0;
    for (const d of letters) {
      if (wanted && !matches(wanted, d)) continue;
      if (d.event === undefined) {
        options.onSkip?.(d, 'undecodable'); // inspect `raw` and purge instead
        continue;
      }
      const gone = d.group === '' ? 'no-group' : (await hasGroup(d.partition, d.group)) ? undefined : 'group-gone';
      if (gone !== undefined) {
        options.onSkip?.(d, gone);
        continue;
      }
      const fields = envelopeFields(d.event);
      fields.push('attempt', '1', 'due', '0', 'origin', d.origin, 'replayed', d.dlqId);
      const to = retryKey(this.config.prefix, type, d.partition, d.group);
      await this.typed(this.c.xadd!(to, '*', ...fields), `XADD ${to}`);
      const from = dlqKey(this.config.prefix, type, d.partition);
      await this.typed(this.c.xdel!(from, d.dlqId), `XDEL ${from}`);
      n++;
    }
    return n;
  }

  /** Deletes dead letters (all of the type, or one group's, or those `ids` picks, as for replay). Returns how many. */
  async purgeDeadLetters(type: string, options: { group?: string; ids?: string[] } = {}): Promise<number> {
    const letters = await this.deadLetters(type, options.group, Number.MAX_SAFE_INTEGER);
    const wanted = options.ids ? new Set(options.ids) : undefined;
    let n = 0;
    for (const d of letters) {
      if (wanted && !matches(wanted, d)) continue;
      const key = dlqKey(this.config.prefix, type, d.partition);
      n += Number(await this.typed(this.c.xdel!(key, d.dlqId), `XDEL ${key}`));
    }
    return n;
  }
}

/** Why `replayDeadLetters` left a letter where it is. */
export type ReplaySkipReason = 'undecodable' | 'no-group' | 'group-gone';

type SlotRange = [number, number, [string, number, ...unknown[]], ...unknown[]];

/**
 * The connections to the masters that own slots now, as the cluster itself says (CLUSTER SLOTS). The client's
 * own list (`nodes('master')`) is only as fresh as its last slot refresh: right after a failover it still
 * has the promoted replica as a replica, and SCAN over it missed every key of the failed-over slots.
 */
async function slotOwners(c: Cluster): Promise<Redis[]> {
  for (let attempt = 0; attempt < 2; attempt++) {
    const ranges = (await c.cluster('SLOTS')) as unknown as SlotRange[];
    const byAddress = new Map(c.nodes('all').map((n) => [`${n.options.host}:${n.options.port}`, n]));
    const owners = [...new Set(ranges.map((r) => `${r[2][0]}:${r[2][1]}`))].map((a) => byAddress.get(a));
    if (owners.every((n) => n !== undefined)) return owners as Redis[];
    await new Promise<void>((resolve) => c.refreshSlotsCache(() => resolve()));
  }
  // Addresses the client maps (natMap) do not match what the nodes report: its own list is all there is.
  return c.nodes('master');
}

/**
 * Whether a Redis error means the stream or group is not there (counts as nothing). Any other failure (in a
 * Cluster: one master stalled or failing over, a timeout) must not: skipped as if empty, it would make
 * `pending`/`groups` report too little during exactly the incidents they are run for.
 */
function isMissing(err: unknown): boolean {
  const m = err instanceof Error ? err.message : String(err);
  return m.includes('no such key') || m.startsWith('NOGROUP');
}

/** A failed admin command as a typed error naming it (the Redis error as `cause`). */
function adminError(what: string, err: unknown, cluster: boolean): Error {
  const hint = !isConnectionProblem(err) ? '' : cluster ? ' (a Cluster master unreachable? see transport.commandTimeoutMs)' : ' (see transport.commandTimeoutMs)';
  const msg = `${what} failed: ${err instanceof Error ? err.message : String(err)}${hint}`;
  return isConnectionProblem(err) ? new ConnectionError(msg, { cause: err }) : new TransportError(msg, { cause: err });
}

/**
 * Whether `ids` names the letter: by `ref`, or by the id of the event it holds. Not by bare DLQ entry id:
 * letters written in the same millisecond to several partitions share one, and purging by it deleted other
 * events' letters; nor by what stands in for an undecodable letter's id (its origin entry id, shared likewise).
 */
function matches(ids: ReadonlySet<string>, d: RedisDeadLetter): boolean {
  return ids.has(d.ref) || (d.event !== undefined && ids.has(d.id));
}

/** `text` with the glob characters of SCAN MATCH escaped. */
function globEscape(text: string): string {
  return text.replace(/[*?[\]\\]/g, (c) => `\\${c}`);
}
