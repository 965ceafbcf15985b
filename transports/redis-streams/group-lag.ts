/**
 * Where each consumer group stands in a partition stream. Redis 7's `XINFO GROUPS` `lag` is the entries
 * added after the group's last delivery, *trimmed ones included* (XADD MAXLEN/MINID removes entries whether
 * or not every group has read them): a group behind the stream's oldest entry shows more lag than the
 * stream holds, and the difference is what retention removed before the group read it, events lost to
 * that group. It can be told only while the group is still behind: once it reads past the oldest entry,
 * Redis's counters no longer show the gap.
 */

export interface GroupPosition {
  group: string;
  consumers: number;
  pending: number;
  /** Entries in the stream the group has not been delivered (undefined: Redis cannot tell, before 7.0). */
  lag: number | undefined;
  /** Entries trimmed before the group read them, while it is behind the oldest (undefined: cannot tell). */
  trimmed: number | undefined;
  /** The group was delivered the stream's newest entry (its last-delivered-id is the stream's last-generated-id). */
  caughtUp: boolean;
  /** Id of the last entry delivered to the group (`0-0`: none yet). */
  lastDelivered: string;
}

interface Xinfo {
  xinfo(...args: string[]): Promise<unknown>;
}

/** Positions of the groups of stream `key`; rejects with Redis's error (no such key: the caller decides). */
export async function groupPositions(client: unknown, key: string): Promise<GroupPosition[]> {
  const c = client as Xinfo;
  const rows = (await c.xinfo('GROUPS', key)) as unknown[][];
  if (rows.length === 0) return [];
  const stream = pairs((await c.xinfo('STREAM', key)) as unknown[]);
  const length = Number(stream['length'] ?? 0);
  const first = stream['first-entry'] as [string, unknown] | null | undefined;
  return rows.map((row) => {
    const f = pairs(row);
    const redisLag = f['lag'] === null || f['lag'] === undefined ? undefined : Number(f['lag']);
    // An empty stream holds nothing to deliver: whatever Redis counts as lag there was trimmed.
    const behind = length === 0 || (first != null && compareIds(String(f['last-delivered-id']), first[0]) < 0);
    return {
      group: String(f['name']),
      consumers: Number(f['consumers'] ?? 0),
      pending: Number(f['pending'] ?? 0),
      // Behind the oldest entry: every entry there is undelivered, and Redis's lag also counts the trimmed.
      lag: behind ? length : redisLag,
      trimmed: behind ? (redisLag === undefined ? undefined : Math.max(0, redisLag - length)) : 0,
      caughtUp: String(f['last-delivered-id']) === String(stream['last-generated-id']),
      lastDelivered: String(f['last-delivered-id']),
    };
  });
}

/**
 * Each group's pending count and lag in stream `key`, from XINFO GROUPS alone (one round trip; no stream
 * lookup): for a stream nothing trims, such as a group's retry stream (only entries the group was delivered
 * are deleted), Redis's lag is the entries not delivered yet. Rejects as `groupPositions` does.
 */
export async function groupCounts(client: unknown, key: string): Promise<{ group: string; pending: number; lag: number | undefined }[]> {
  const rows = (await (client as Xinfo).xinfo('GROUPS', key)) as unknown[][];
  return rows.map((row) => {
    const f = pairs(row);
    return { group: String(f['name']), pending: Number(f['pending'] ?? 0), lag: f['lag'] === null || f['lag'] === undefined ? undefined : Number(f['lag']) };
  });
}

/** Orders stream ids (`ms-seq`) numerically. */
export function compareIds(a: string, b: string): number {
  const [am, as = '0'] = a.split('-');
  const [bm, bs = '0'] = b.split('-');
  const ms = BigInt(am!) - BigInt(bm!);
  if (ms !== 0n) return ms < 0n ? -1 : 1;
  const seq = BigInt(as) - BigInt(bs);
  return seq === 0n ? 0 : seq < 0n ? -1 : 1;
}

export function pairs(row: unknown[]): Record<string, unknown> {
  const o: Record<string, unknown> = {};
  for (let i = 0; i + 1 < row.length; i += 2) o[String(row[i])] = row[i + 1];
  return o;
}
