/**
 * The reclaim of a Redis Streams subscription: a pass on an interval takes, with XAUTOCLAIM (cursor kept per
 * stream), entries idle past minIdleMs on other consumers (dead ones); an idle entry delivered twice or more
 * is claimed alone (suspect-claim.ts) and finished before the next. Every claim goes into handler slots
 * reserved for it (`Deliveries.reserve`): it takes no more entries than slots are free, and they start at
 * once, so the delivery a claim counts is a handler start. Delivery counts (XPENDING) of entries claimed or
 * re-read give their attempt. Group housekeeping runs with the first pass and every 20th.
 */
import { reclaimChannel, type ReclaimMessage } from '../../src/diagnostics.js';
import { describeError } from '../../src/errors.js';
import type { AckBatcher } from './ack-batch.js';
import { isConnectionProblem } from './connection.js';
import { noop, type ConsumerContext, type Entry, type RawEntry } from './consumer-records.js';
import type { Deliveries } from './deliveries.js';
import { ensureGroups, housekeeping, reportTrimmed } from './housekeeping.js';
import { claimOwned } from './owned-claim.js';
import { claimSuspect } from './suspect-claim.js';

/** What a reclaim step leaves to do: the same stream again, the next stream, or nothing this pass (no slot free). */
type Step = 'again' | 'next' | 'stop';

export class Reclaimer {
  private passes = 0;
  private reclaiming = false;
  /** Entries claimed in bulk this pass, per stream index (logged once per pass: claims are slot-sized). */
  private readonly claimed = new Map<number, number>();

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
    try {
      // Housekeeping on the first pass and every 20th after it.
      if (this.passes++ % 20 === 0) {
        await housekeeping(this.ctx, this.onNoScripts).catch((err: unknown) => this.ctx.logger.debug({ err: describeError(err) }, 'consumer housekeeping failed'));
      }
      if (await this.passOverStreams()) await ensureGroups(this.ctx, '0').catch(noop);
    } finally {
      // One warning per stream and pass: suspects are claimed one at a time, and there can be thousands.
      reportTrimmed(this.ctx, this.ctx.streams.keys());
      for (const [idx, count] of this.claimed) this.reclaimed(idx, count, 'reclaimed idle pending entries');
      this.claimed.clear();
      this.reclaiming = false;
    }
  }

  /** Reclaims stream by stream; true when a stream had lost its group (NOGROUP). */
  private async passOverStreams(): Promise<boolean> {
    let nogroup = false;
    for (let idx = 0; idx < this.ctx.streams.length && !this.ctx.closing; idx++) {
      try {
        const step = await this.reclaimStream(idx);
        if (step === 'stop') break;
        if (step === 'again') idx--; // the same stream again: its next idle entries
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
    return nogroup;
  }

  /**
   * One reclaim step on stream `idx`: claims a suspect alone, or idle entries in bulk, as many as handler slots
   * it could reserve; 'again' when the stream may hold more.
   */
  private async reclaimStream(idx: number): Promise<Step> {
    const s = this.ctx.streams[idx]!;
    const held = this.deliveries.held[idx]!;
    // Idle entries delivered twice or more without an ack may hold one that kills its consumer: those
    // are claimed one at a time, each finished before the next, so only such an entry's delivery count
    // grows (a claim raises the count of every entry it takes). The rest are claimed in bulk.
    const idle = (await this.ctx.cmd.xpending(s.key, this.ctx.spec.group, 'IDLE', this.ctx.opts.minIdleMs, s.cursor, '+', this.ctx.opts.claimCount)) as [string, string, number, number][];
    const rows = idle.filter((r) => !held.has(r[0]));
    if (rows.length === 0) {
      s.cursor = '0-0'; // nothing idle past the cursor: start over next pass
      return 'next';
    }
    const suspect = rows.findIndex((r) => Number(r[3]) >= 2);
    const slots = await this.deliveries.reserve(suspect === 0 ? 1 : suspect > 0 ? suspect : rows.length);
    let reserved = slots;
    const release = (): void => {
      this.deliveries.release(reserved);
      reserved = 0;
    };
    try {
      if (slots === 0 || this.ctx.closing) return 'stop';
      if (suspect === 0) {
        await this.claimAlone(idx, rows[0]![0], release);
        return 'again';
      }
      // Within the slots: COUNT below the first suspect's place claims none of the suspects (XAUTOCLAIM and
      // XPENDING scan from the same cursor in the same order).
      const reply = await this.ctx.cmd.xautoclaim(s.key, this.ctx.spec.group, this.ctx.spec.consumer, this.ctx.opts.minIdleMs, s.cursor, 'COUNT', slots);
      s.cursor = reply[0];
      // Redis 7 drops entries trimmed while pending from the PEL and names them here.
      if (!s.retry && reply[2] !== undefined) s.trimmedUnreported += reply[2].length;
      const entries = this.deliveries.notHere(
        idx,
        reply[1].filter((e) => e !== null),
      );
      if (entries.length === 0) return reply[0] === '0-0' ? 'next' : 'again';
      const deliveries = await this.deliveryCounts(idx, entries);
      this.claimed.set(idx, (this.claimed.get(idx) ?? 0) + entries.length);
      if (this.ctx.closing) return 'stop';
      this.deliveries.accept(idx, entries, deliveries);
      release();
      await this.withdrawHeld(idx);
      return 'again';
    } finally {
      release();
    }
  }

  /**
   * Claims one idle entry (`XCLAIM`, still subject to `minIdleMs`) into the slot reserved for it and waits until
   * its events have run, like the serial pending drain: an entry redelivered after consumers died with it is
   * run alone. `release` gives the slot back once the entry has started (only once).
   */
  private async claimAlone(idx: number, id: string, release: () => void): Promise<void> {
    const s = this.ctx.streams[idx]!;
    const { entries: claimed, trimmed } = await claimSuspect(this.ctx.command, s.key, this.ctx.spec.group, this.ctx.spec.consumer, this.ctx.opts.minIdleMs, id);
    if (trimmed) {
      // Redis 7 has dropped it from the pending list; Redis 6.2 has made it ours: acked, as the pending drain does.
      this.acks.ack(idx, id);
      if (!s.retry) s.trimmedUnreported++;
      return;
    }
    if (claimed.length === 0 || this.ctx.closing) return; // taken or acked meanwhile
    this.reclaimed(idx, 1, 'reclaimed an entry delivered before without an ack, alone');
    const started: Entry[] = [];
    this.deliveries.accept(idx, claimed, await this.deliveryCounts(idx, claimed), started);
    release();
    await this.withdrawHeld(idx);
    await this.deliveries.finished(started);
  }

  /** Entries taken over from other consumers: logged (`info`) and told to `eventlane:reclaim`. */
  private reclaimed(idx: number, entries: number, msg: string): void {
    const { spec } = this.ctx;
    this.ctx.logger.info({ group: spec.group, stream: this.ctx.streams[idx]!.key, count: entries }, msg);
    if (reclaimChannel.hasSubscribers) reclaimChannel.publish({ type: spec.type, group: spec.group, consumer: spec.consumer, entries } satisfies ReclaimMessage);
  }

  /**
   * Entries just claimed or re-read on stream `idx` that are held for their due time (retries not due yet):
   * no handler starts on them now, so their delivery count goes back to what it was before (`XCLAIM
   * RETRYCOUNT`, where still this consumer's), and a death while they wait charges them nothing.
   */
  async withdrawHeld(idx: number): Promise<void> {
    const byCount = new Map<number, string[]>();
    for (const e of this.deliveries.takeHeldRedeliveries(idx)) {
      if (e.deliveries === undefined || e.deliveries < 2) continue;
      let ids = byCount.get(e.deliveries - 1);
      if (!ids) byCount.set(e.deliveries - 1, (ids = []));
      ids.push(e.id);
    }
    for (const [count, ids] of byCount) {
      await claimOwned(this.ctx.command, this.ctx.streams[idx]!.key, this.ctx.spec.group, this.ctx.spec.consumer, ids, count, this.onNoScripts).catch((err: unknown) =>
        this.ctx.logger.debug({ err: describeError(err) }, 'could not reset the delivery count of redelivered entries held until due'),
      );
    }
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
