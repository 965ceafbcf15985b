/**
 * Group housekeeping of a Redis Streams subscription: creating its consumer group on every stream it reads
 * (again on NOGROUP), deleting the group's idle consumers that hold nothing, and the warnings about entries
 * trimmed by retention before the group read them or while they were pending.
 */
import { describeError } from '../../src/errors.js';
import { isConnectionProblem } from './connection.js';
import type { ConsumerContext, StreamInfo } from './consumer-records.js';
import { groupPositions, pairs } from './group-lag.js';
import { deleteIfNothingPending } from './prune-consumer.js';
import { streamKey } from './keys.js';

/**
 * Creates the group on every stream; `from` applies to partition streams, retry streams start at 0. A group
 * that already existed on some partition streams and is new on others (the type's partitions were raised)
 * reads the new ones from their start whatever `from` says: `$` there skipped what producers configured with
 * the new count had written before this consumer came.
 */
export async function ensureGroups(ctx: ConsumerContext, from: '$' | '0'): Promise<void> {
  const created = await Promise.all(
    ctx.streams.map((s) =>
      ctx.cmd.xgroup('CREATE', s.key, ctx.spec.group, s.retry ? '0' : from, 'MKSTREAM').then(
        () => true,
        (err: Error) => {
          if (!String(err.message).includes('BUSYGROUP')) throw err;
          return false;
        },
      ),
    ),
  );
  if (from === '0') return;
  const partitions = ctx.streams.flatMap((s, i) => (s.retry ? [] : [{ s, created: created[i]! }]));
  const extended = partitions.filter((p) => p.created);
  if (extended.length === 0 || extended.length === partitions.length) return;
  await Promise.all(extended.map((p) => ctx.cmd.xgroup('SETID', p.s.key, ctx.spec.group, '0')));
  ctx.logger.info(
    { group: ctx.spec.group, type: ctx.spec.type, partitions: extended.map((p) => p.s.partition) },
    'the group already existed on the other partitions of the type: it reads these new partitions from their start (not from startFrom $)',
  );
}

const warnedUnread = new WeakSet<ConsumerContext>();

/**
 * Warns (once per subscription) when the type has a partition stream past the ones this subscription reads:
 * a producer configured with more partitions writes events there that no consumer with this count reads.
 * Never rejects (a failed check is logged at debug and tried again at the next housekeeping).
 */
export async function checkUnreadPartitions(ctx: ConsumerContext): Promise<void> {
  if (warnedUnread.has(ctx)) return;
  const read = ctx.streams.filter((s) => !s.retry).length;
  const next = streamKey(ctx.config.prefix, ctx.spec.type, read);
  const found = await ctx.cmd.exists(next).catch((err: unknown) => {
    ctx.logger.debug({ err: describeError(err) }, 'checking for partitions past the ones read failed');
    return 0;
  });
  if (Number(found) === 0) return;
  warnedUnread.add(ctx);
  ctx.logger.warn(
    { group: ctx.spec.group, type: ctx.spec.type, partitions: read, stream: next },
    `stream ${next} exists, but this subscription reads partitions 0..${read - 1} only: events a producer configured with more partitions writes there are not consumed; give every producer and consumer of the type the same partitions (transport.partitions / topics)`,
  );
}

/**
 * Per partition stream: deletes consumers of the group that hold nothing and have been idle past
 * deleteIdleConsumersMs, and warns when retention trimmed entries the group had not read. A stream that
 * fails is skipped (its group gone, its master stalled), as in the reclaim.
 */
export async function housekeeping(ctx: ConsumerContext, onNoScripts: (err: Error) => void): Promise<void> {
  const limit = ctx.opts.deleteIdleConsumersMs;
  await checkUnreadPartitions(ctx);
  for (const s of ctx.streams) {
    if (s.retry || ctx.closing) continue;
    try {
      if (limit > 0) await pruneStream(ctx, s.key, limit, onNoScripts);
      await checkTrimmed(ctx, s);
    } catch (err) {
      ctx.logger.debug({ err: describeError(err), stream: s.key }, 'consumer housekeeping of a stream failed');
      if (!ctx.connector.isCluster && isConnectionProblem(err)) return;
    }
  }
}

/** Entries delivered to the group but trimmed before a consumer finished them. */
export function trimmedPending(ctx: ConsumerContext, s: StreamInfo, count: number): void {
  ctx.logger.warn(
    { group: ctx.spec.group, stream: s.key, count },
    'pending entries were trimmed (transport maxLen / minIdAgeMs) before the group finished them: their events are lost to the group; raise the retention',
  );
}

/** The trimmed entries counted on these streams (indices) and not yet reported: one warning per stream. */
export function reportTrimmed(ctx: ConsumerContext, streams: Iterable<number>): void {
  for (const idx of streams) {
    const s = ctx.streams[idx]!;
    if (s.trimmedUnreported === 0) continue;
    trimmedPending(ctx, s, s.trimmedUnreported);
    s.trimmedUnreported = 0;
  }
}

/** Entries of `s` trimmed before this group read them, counted once each (see group-lag.ts). */
async function checkTrimmed(ctx: ConsumerContext, s: StreamInfo): Promise<void> {
  const me = (await groupPositions(ctx.command, s.key)).find((g) => g.group === ctx.spec.group);
  if (me?.trimmed === undefined) return;
  if (me.trimmed <= s.trimmedSeen) {
    if (me.trimmed === 0) s.trimmedSeen = 0; // past the gap: a later one is reported anew
    return;
  }
  ctx.logger.warn(
    { group: ctx.spec.group, stream: s.key, trimmed: me.trimmed, lag: me.lag },
    'entries were trimmed (transport maxLen / minIdAgeMs) before this group read them: their events are lost to the group; raise the retention or add consumers',
  );
  s.trimmedSeen = me.trimmed;
}

async function pruneStream(ctx: ConsumerContext, key: string, limit: number, onNoScripts: (err: Error) => void): Promise<void> {
  const { spec } = ctx;
  const rows = (await ctx.cmd.xinfo('CONSUMERS', key, spec.group)) ?? [];
  for (const row of rows) {
    const f = pairs(row);
    const name = String(f['name']);
    // Never a consumer that still has pending entries, never ourselves.
    if (name === spec.consumer || Number(f['pending']) > 0 || Number(f['idle']) < limit) continue;
    const res = await deleteIfNothingPending(ctx.command, key, spec.group, name, onNoScripts);
    if (res === 'deleted') ctx.logger.info({ group: spec.group, stream: key, consumer: name }, 'deleted an idle consumer with no pending entries');
    else if (res !== 'busy') {
      ctx.logger.warn(
        { group: spec.group, stream: key, consumer: name, dropped: res.dropped },
        'deleted an idle consumer that had read entries since it was found idle (Redis refuses scripts, so the check was not atomic): they are no longer pending and will not be redelivered',
      );
    }
  }
}
