/**
 * Keeping a Redis Streams subscription's held entries its own (and those whose retry/DLQ write Redis refused
 * for now and is tried again): on an interval, entries held past a third
 * of minIdleMs have their idle time reset (XCLAIM JUSTID, where still this consumer's: owned-claim.ts) so
 * no other consumer reclaims them while their handlers run; those found taken by another are abandoned
 * here. At close, entries never started get back the delivery count they came with, and so do entries Redis
 * delivered to a read whose reply close() cut off.
 */
import { describeError } from '../../src/errors.js';
import type { ConsumerContext } from './consumer-records.js';
import type { Deliveries } from './deliveries.js';
import { claimOwned } from './owned-claim.js';

export class Keepalive {
  constructor(
    private readonly ctx: ConsumerContext,
    private readonly deliveries: Deliveries,
  ) {}

  /**
   * Resets the idle time of entries held here so other consumers do not reclaim them, where they are still
   * this consumer's: one that stalled past minIdleMs may find an entry reclaimed by another meanwhile, and
   * leaves it to that one (`lose`).
   */
  run(): void {
    const now = Date.now();
    const threshold = now - Math.floor(this.ctx.opts.minIdleMs / 3);
    const byStream = new Map<number, string[]>();
    const due = (idx: number, id: string, e: { claimedAt: number }): void => {
      if (e.claimedAt > threshold) return;
      e.claimedAt = now;
      let ids = byStream.get(idx);
      if (!ids) byStream.set(idx, (ids = []));
      ids.push(id);
    };
    // Entries held for their handlers, and entries whose retry/DLQ write is being tried again (Deliveries.pinned).
    this.deliveries.held.forEach((m) => m.forEach((e) => due(e.stream, e.id, e)));
    this.deliveries.pinned.forEach((m, idx) => m.forEach((p, id) => due(idx, id, p)));
    for (const [idx, ids] of byStream) {
      claimOwned(this.ctx.command, this.ctx.streams[idx]!.key, this.ctx.spec.group, this.ctx.spec.consumer, ids, undefined, this.noScripts).then(
        (lost) => this.lose(idx, lost),
        (err: unknown) => this.ctx.logger.debug({ err: describeError(err) }, 'keepalive XCLAIM failed'),
      );
    }
  }

  readonly noScripts = (err: Error): void => {
    this.ctx.logger.warn(
      { group: this.ctx.spec.group, err: err.message },
      'Redis refuses scripts (grant +@scripting, or EVALSHA and EVAL): the keepalive falls back to a plain XCLAIM, so a consumer that stalls past minIdleMs takes back entries another has reclaimed',
    );
  };

  /**
   * Entries held here that Redis no longer has pending on this consumer: another consumer reclaimed them
   * (this one stalled past minIdleMs), or acked them after doing so. Their events not started yet are left
   * to it, and they are not acked here; handlers already running finish.
   */
  private lose(idx: number, ids: string[]): void {
    const held = this.deliveries.held[idx]!;
    let entries = 0;
    let events = 0;
    for (const id of ids) {
      const pin = this.deliveries.pinned[idx]!.get(id);
      if (pin !== undefined) pin.lost = true; // its write is not tried again: the entry's new owner handles it
      const e = held.get(id);
      if (e === undefined || e.abandoned) continue; // finished here meanwhile
      entries++;
      events += e.events.length - e.cursor;
      this.deliveries.abandon(e);
    }
    if (entries > 0) {
      this.ctx.logger.warn(
        { group: this.ctx.spec.group, stream: this.ctx.streams[idx]!.key, entries, skipped: events },
        'entries no longer pending on this consumer (it stalled past minIdleMs and another reclaimed them, or a failover lost their delivery); their remaining events are left to the group',
      );
    }
  }

  /**
   * Entries left pending that no handler started (read ahead and queued at close, retries waiting for
   * their due time) get back the delivery count they came with: the next consumer's
   * delivery then counts as the attempt they were waiting for, not as one more that failed.
   */
  async releaseUnstarted(): Promise<void> {
    const byCount = new Map<string, { idx: number; count: number; ids: string[] }>();
    for (const held of this.deliveries.held) {
      for (const e of held.values()) {
        if (e.cursor > 0 || e.abandoned || e.deliveries === undefined) continue;
        const k = `${e.stream}:${e.deliveries}`;
        let g = byCount.get(k);
        if (!g) byCount.set(k, (g = { idx: e.stream, count: e.deliveries, ids: [] }));
        g.ids.push(e.id);
      }
    }
    await Promise.allSettled(
      [...byCount.values()].map((g) =>
        claimOwned(this.ctx.command, this.ctx.streams[g.idx]!.key, this.ctx.spec.group, this.ctx.spec.consumer, g.ids, g.count - 1, this.noScripts).catch((err: unknown) => {
          this.ctx.logger.debug({ err: describeError(err) }, 'could not reset the delivery count of unstarted entries');
        }),
      ),
    );
  }

  /**
   * Entries Redis delivered to a read that close() cut off (or whose reply came too late to be taken): pending
   * on this consumer, not here, and delivered since that read was sent (`since`, ms). No handler saw them, so
   * their delivery count goes back by one, as for `releaseUnstarted`. Only while the command connection is
   * ready: close() does not wait for a server that is down (the entries then keep the delivery, as after a crash).
   */
  async releaseUnread(reads: readonly { streams: readonly number[]; since: number }[]): Promise<void> {
    if (this.ctx.command.status !== 'ready') return;
    const now = Date.now();
    const work = reads.filter((r) => r.since > 0).flatMap((r) => r.streams.map((idx) => this.releaseUnreadOf(idx, now - r.since)));
    await Promise.allSettled(work);
  }

  private async releaseUnreadOf(idx: number, maxIdle: number): Promise<void> {
    const key = this.ctx.streams[idx]!.key;
    const byCount = new Map<number, string[]>();
    try {
      for (let from = '-'; ;) {
        const rows = (await this.ctx.cmd.xpending(key, this.ctx.spec.group, from, '+', UNREAD_PAGE, this.ctx.spec.consumer)) as [string, string, number, number][];
        for (const [id, , idle, count] of rows) {
          if (Number(idle) > maxIdle || Number(count) < 1 || this.deliveries.here(idx, id)) continue;
          const ids = byCount.get(Number(count) - 1) ?? [];
          byCount.set(Number(count) - 1, ids);
          ids.push(id);
        }
        if (rows.length < UNREAD_PAGE) break;
        from = '(' + rows[rows.length - 1]![0];
      }
      for (const [count, ids] of byCount) await claimOwned(this.ctx.command, key, this.ctx.spec.group, this.ctx.spec.consumer, ids, count, this.noScripts);
    } catch (err) {
      this.ctx.logger.debug({ err: describeError(err), stream: key }, 'could not reset the delivery count of entries delivered to a read cut off at close');
    }
  }
}

/** Rows per XPENDING page when looking for entries delivered to a read cut off at close. */
const UNREAD_PAGE = 500;
