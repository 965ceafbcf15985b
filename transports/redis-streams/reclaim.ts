/**
 * The reclaim of a Redis Streams subscription: a pass on an interval takes, with XAUTOCLAIM (cursor kept per
 * stream), entries idle past minIdleMs on other consumers (dead ones); an idle entry delivered twice or more
 * is claimed alone (suspect-claim.ts) and finished before the next. Delivery counts (XPENDING) of entries
 * claimed or re-read give their attempt. Group housekeeping runs with the first pass and every 20th.
 */
import { describeError } from '../../src/errors.js';
import type { AckBatcher } from './ack-batch.js';
import { isConnectionProblem } from './connection.js';
import { noop, type ConsumerContext, type Entry, type RawEntry } from './consumer-records.js';
import type { Deliveries } from './deliveries.js';
import { ensureGroups, housekeeping, reportTrimmed } from './housekeeping.js';
import { claimSuspect } from './suspect-claim.js';

export class Reclaimer {
  private passes = 0;
  private reclaiming = false;

  constructor(
    private readonly ctx: ConsumerContext,
    private readonly deliveries: Deliveries,
    private readonly acks: AckBatcher,
    private readonly onNoScripts: (err: Error) => void,
  ) {}

  /** One reclaim pass over every stream (skipped while one runs, or when closing). */
  async run(): Promise<void> {
    if (this.reclaiming || this.ctx.closing) return;
    this.reclaiming = true;
    let nogroup = false;
    try {
      // Housekeeping on the first pass and every 20th after it.
      if (this.passes++ % 20 === 0) {
        await housekeeping(this.ctx, this.onNoScripts).catch((err: unknown) => this.ctx.logger.debug({ err: describeError(err) }, 'consumer housekeeping failed'));
      }
      for (let idx = 0; idx < this.ctx.streams.length && !this.ctx.closing; idx++) {
        if (this.deliveries.full) break;
        try {
          if (await this.reclaimStream(idx)) idx--; // the same stream again: its next idle entry
        } catch (err) {
          // One stream failing does not end the pass: in a Cluster each partition has its own master, and
          // one that is stalled or failing over must not stop the reclaim of the partitions on the others.
          const msg = describeError(err);
          if (msg.includes('NOGROUP')) nogroup = true;
          else this.ctx.logger.debug({ err: msg, stream: this.ctx.streams[idx]!.key }, 'reclaim of a stream failed');
          // Standalone, every stream is on the one server: a connection problem ends the pass (not one
          // commandTimeoutMs per stream).
          if (!this.ctx.connector.isCluster && isConnectionProblem(err)) break;
          // A partition's retry stream shares its slot (its master): skip it this pass rather than wait again.
          if (!this.ctx.streams[idx]!.retry && !msg.includes('NOGROUP')) idx++;
        }
      }
      if (nogroup) await ensureGroups(this.ctx, '0').catch(noop);
    } finally {
      // One warning per stream and pass: suspects are claimed one at a time, and there can be thousands.
      reportTrimmed(this.ctx, this.ctx.streams.keys());
      this.reclaiming = false;
    }
  }

  /** One reclaim step on stream `idx`; true when it claimed a suspect alone and the stream should be looked at again. */
  private async reclaimStream(idx: number): Promise<boolean> {
    const s = this.ctx.streams[idx]!;
    const held = this.deliveries.held[idx]!;
    // Idle entries delivered twice or more without an ack may hold one that kills its consumer: those
    // are claimed one at a time, each finished before the next, so only such an entry's delivery count
    // grows (a claim raises the count of every entry it takes). The rest are claimed in bulk.
    const idle = (await this.ctx.cmd.xpending(s.key, this.ctx.spec.group, 'IDLE', this.ctx.opts.minIdleMs, s.cursor, '+', this.ctx.opts.claimCount)) as [string, string, number, number][];
    const rows = idle.filter((r) => !held.has(r[0]));
    if (rows.length === 0) {
      s.cursor = '0-0'; // nothing idle past the cursor: start over next pass
      return false;
    }
    const suspect = rows.findIndex((r) => Number(r[3]) >= 2);
    if (suspect === 0) {
      await this.claimAlone(idx, rows[0]![0]);
      return true;
    }
    const count = suspect > 0 ? suspect : this.ctx.opts.claimCount;
    const reply = await this.ctx.cmd.xautoclaim(s.key, this.ctx.spec.group, this.ctx.spec.consumer, this.ctx.opts.minIdleMs, s.cursor, 'COUNT', count);
    s.cursor = reply[0];
    // Redis 7 drops entries trimmed while pending from the PEL and names them here.
    if (!s.retry && reply[2] !== undefined) s.trimmedUnreported += reply[2].length;
    const entries = this.deliveries.notHere(idx, reply[1].filter((e) => e !== null));
    if (entries.length === 0) return false;
    const deliveries = await this.deliveryCounts(idx, entries);
    this.ctx.logger.info({ group: this.ctx.spec.group, stream: s.key, count: entries.length }, 'reclaimed idle pending entries');
    if (!this.ctx.closing) this.deliveries.accept(idx, entries, deliveries);
    return false;
  }

  /**
   * Claims one idle entry (`XCLAIM`, still subject to `minIdleMs`) and waits until its events have run,
   * like the serial pending drain: an entry redelivered after consumers died with it is run alone.
   */
  private async claimAlone(idx: number, id: string): Promise<void> {
    const s = this.ctx.streams[idx]!;
    const { entries: claimed, trimmed } = await claimSuspect(this.ctx.command, s.key, this.ctx.spec.group, this.ctx.spec.consumer, this.ctx.opts.minIdleMs, id);
    if (trimmed) {
      // Redis 7 has dropped it from the pending list; Redis 6.2 has made it ours: acked, as the pending drain does.
      this.acks.ack(idx, id);
      if (!s.retry) s.trimmedUnreported++;
      return;
    }
    if (claimed.length === 0 || this.ctx.closing) return; // taken or acked meanwhile
    this.ctx.logger.info({ group: this.ctx.spec.group, stream: s.key, id }, 'reclaimed an entry delivered before without an ack, alone');
    const started: Entry[] = [];
    this.deliveries.accept(idx, claimed, await this.deliveryCounts(idx, claimed), started);
    await this.deliveries.finished(started);
  }

  /** Delivery counts (XPENDING) of entries this consumer just got from its pending list or a reclaim. */
  async deliveryCounts(idx: number, entries: RawEntry[]): Promise<Map<string, number>> {
    const deliveries = new Map<string, number>();
    const wanted = new Set(entries.map((e) => e[0]));
    let from = entries[0]![0];
    const last = entries[entries.length - 1]![0];
    try {
      // The range also holds this consumer's other pending entries (those it is running, say): page
      // through it until every entry asked about has its count.
      while (wanted.size > 0) {
        const count = wanted.size + this.deliveries.held[idx]!.size + 16;
        const pend = (await this.ctx.cmd.xpending(this.ctx.streams[idx]!.key, this.ctx.spec.group, from, last, count, this.ctx.spec.consumer)) as [string, string, number, number][];
        for (const [id, , , n] of pend) if (wanted.delete(id)) deliveries.set(id, Number(n));
        if (pend.length < count) break;
        from = '(' + pend[pend.length - 1]![0];
      }
    } catch (err) {
      this.ctx.logger.debug({ err: describeError(err) }, 'XPENDING failed; attempts of redelivered entries unknown');
    }
    return deliveries;
  }
}
