/**
 * Claiming one suspect entry alone (`XCLAIM <id>`, still subject to min-idle), telling whether it had been
 * trimmed while pending. Redis 7 drops such an entry from the pending list at the XCLAIM and says nothing
 * (XAUTOCLAIM names them in its reply, XCLAIM does not); Redis 6.2 claims it and replies nil in its place.
 * The XCLAIM runs in a MULTI between two `XPENDING <id> <id> 1`: pending before, then neither claimed nor
 * pending after, is the drop (only a deleted entry leaves the list at an XCLAIM), not an entry acked or
 * taken by another consumer meanwhile.
 */
import type { Client } from './connection.js';

type RawEntry = [string, string[] | null];

export interface SuspectClaim {
  /** The entry with its fields, if claimed (empty: taken, acked or trimmed). */
  entries: RawEntry[];
  /** It was pending and is gone from the stream: its events are lost to the group (Redis 6.2: now pending on us, to ack). */
  trimmed: boolean;
}

export async function claimSuspect(client: Client, stream: string, group: string, consumer: string, minIdleMs: number, id: string): Promise<SuspectClaim> {
  const replies = await client.multi().xpending(stream, group, id, id, 1).xclaim(stream, group, consumer, minIdleMs, id).xpending(stream, group, id, id, 1).exec();
  if (replies === null) return { entries: [], trimmed: false };
  for (const [err] of replies) if (err) throw err;
  const [before, claimed, after] = replies.map((r) => r[1]) as [unknown[], (RawEntry | null)[], unknown[]];
  const entries = claimed.filter((e): e is RawEntry => e !== null && e[1] !== null);
  const nil = claimed.length > entries.length;
  return { entries, trimmed: nil || (entries.length === 0 && before.length > 0 && after.length === 0) };
}
