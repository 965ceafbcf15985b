/**
 * One subscription (a consumer in a consumer group) of the Redis Streams transport.
 *
 * Streams read: every partition stream of the type, plus the group's private retry stream of each
 * partition. Algorithm (docs/consumer-semantics.md):
 *  1. XGROUP CREATE ... MKSTREAM on both (BUSYGROUP ignored).
 *  2. Drain this consumer's own pending entries (XREADGROUP ... 0) before reading `>`.
 *  3. Read loop: XREADGROUP COUNT n BLOCK blockMs on a dedicated connection, n sized so that at most
 *     `prefetch` events are held; a watchdog replaces a connection whose read outlives blockMs+watchdogMs.
 *  4. Each event of an entry runs the handler (`concurrency` at once). An entry is acked (one variadic
 *     XACK per stream per tick) when all of its events are done: succeeded, re-routed to the retry
 *     stream (failed, attempts left) or dead-lettered. Successful events are never redelivered
 *     because of a sibling's failure.
 *  5. Retry entries carry `attempt` and `due`; they are held until due, then run again.
 *  6. XAUTOCLAIM reclaims entries idle longer than minIdleMs (dead consumers), those delivered twice or more
 *     one at a time (suspect-claim.ts); entries delivered more than maxDeliveries times without an ack go to
 *     the DLQ. Held entries are kept alive with XCLAIM JUSTID where they are still this consumer's (owned-claim.ts).
 *  7. NOGROUP (stream/group deleted, empty restart) recreates the groups.
 *
 * This file holds the read loop and the subscription's start and close; the parts it wires together:
 * reader.ts (read connections, XREADGROUP, watchdog), deliveries.ts (entries held, handlers run),
 * ack-batch.ts (XACK), reroute.ts (retry stream, DLQ), reclaim.ts (XAUTOCLAIM), keepalive.ts (XCLAIM
 * JUSTID of held entries), housekeeping.ts (group creation, idle consumers, trimmed entries) and
 * consumer-records.ts (the records they share).
 */
import type { SubscriptionProgress } from '../../src/health.js';
import { ConnectionError, describeError, EventlaneError, TransportError } from '../../src/errors.js';
import type { Logger } from '../../src/logger.js';
import type { DeliveryHandler, SubscriptionSpec, TransportSubscription } from '../../src/transport.js';
import type { JsonReader } from '../../src/json-reader.js';
import type { ResolvedConfig, ResolvedSubscribeOptions } from './config.js';
import { isConnectionProblem, type Client, type Connector } from './connection.js';
import { retryKey, streamKey } from './keys.js';
import { AckBatcher } from './ack-batch.js';
import { Reroute } from './reroute.js';
import { Deliveries } from './deliveries.js';
import { Keepalive } from './keepalive.js';
import { Reclaimer } from './reclaim.js';
import { ReadConnections, type Reader } from './reader.js';
import { xackHead } from './wire-command.js';
import { checkUnreadPartitions, ensureGroups, reportTrimmed } from './housekeeping.js';
import { noop, type Cmd, type ConsumerContext, type Entry, type ReadReply, type StreamInfo } from './consumer-records.js';

/** A read loop's state between its steps. */
interface ReadLoopState {
  /**
   * A read issued before the previous reply is processed, so Redis prepares the next batch while handlers
   * run (prefetch may be exceeded by one read).
   */
  ahead: Promise<ReadReply> | undefined;
  /** Failed steps in a row: the wait before the next grows with them. */
  failures: number;
}

export class RedisConsumer implements TransportSubscription {
  private readonly streams: StreamInfo[] = [];
  private readonly keyIndex = new Map<string, number>();
  private readonly timers = new Set<NodeJS.Timeout>();
  private readonly loops: Promise<void>[] = [];
  private closed: Promise<void> | undefined;
  private reclaimTimer: NodeJS.Timeout | undefined;
  private keepaliveTimer: NodeJS.Timeout | undefined;
  private signalClose!: () => void;
  private readonly closeSignal = new Promise<void>((resolve) => (this.signalClose = resolve));
  private readonly ctx: ConsumerContext;
  private readonly acks: AckBatcher;
  private readonly deliveries: Deliveries;
  private readonly reclaimer: Reclaimer;
  private readonly keepalive: Keepalive;
  private readonly reads: ReadConnections;

  /** Partitions read: only ever raised (`follow`). */
  private partitions: number;
  /** The last `follow` still adding partitions, if any. */
  private following: Promise<void> = Promise.resolve();

  constructor(
    readonly spec: SubscriptionSpec,
    private readonly opts: ResolvedSubscribeOptions,
    handler: DeliveryHandler,
    config: ResolvedConfig,
    private readonly connector: Connector,
    command: Client,
    partitions: number,
    private readonly logger: Logger,
    /** Parses per-event entries' payloads (compiled from the type's reader plan where there is one). */
    readData: JsonReader,
  ) {
    const cmd = command as unknown as Cmd;
    this.ctx = { spec, opts, config, connector, command, cmd, logger, streams: this.streams, closing: false, closeSignal: this.closeSignal };
    this.acks = new AckBatcher(this.ctx);
    this.partitions = partitions;
    this.addStreams(0, partitions);
    this.deliveries = new Deliveries(this.ctx, handler, readData, this.acks, new Reroute(this.ctx));
    this.keepalive = new Keepalive(this.ctx, this.deliveries);
    this.reclaimer = new Reclaimer(this.ctx, this.deliveries, this.acks, this.keepalive.noScripts);
    this.reads = new ReadConnections(this.ctx, this.deliveries, this.acks);
  }

  async start(): Promise<void> {
    // Groups are created while the read connections open (both before the first read).
    const opening = this.reads.open(this.partitions);
    const created = await ensureGroups(this.ctx, this.spec.startFrom).then(
      () => ({ ok: true as const }),
      (err: unknown) => ({ ok: false as const, err }),
    );
    const opened = await opening;
    opened.forEach((o, i) => {
      if (o.status === 'fulfilled') this.reads.attach(this.reads.readers[i]!, o.value);
    });
    const failedOpen = opened.find((o): o is PromiseRejectedResult => o.status === 'rejected');
    if (!created.ok || failedOpen) {
      for (const r of this.reads.readers) r.conn?.disconnect();
      throw this.startError(created.ok ? failedOpen!.reason : created.err);
    }
    void checkUnreadPartitions(this.ctx);
    for (const r of this.reads.readers) this.loops.push(this.readLoop(r));
    const reclaimMs = this.opts.reclaimIntervalMs;
    this.reads.startWatchdog();
    this.reclaimTimer = setInterval(() => void this.reclaimer.run(), reclaimMs);
    this.reclaimTimer.unref();
    this.keepaliveTimer = setInterval(() => this.keepalive.run(), Math.max(10, Math.floor(this.opts.minIdleMs / 3)));
    this.keepaliveTimer.unref();
  }

  /** The streams of partitions `from..to - 1` (each: its partition stream, then the group's retry stream); their indices. */
  private addStreams(from: number, to: number): number[] {
    const { prefix } = this.ctx.config;
    const added: number[] = [];
    for (let p = from; p < to; p++) {
      for (const retry of [false, true]) {
        const key = retry ? retryKey(prefix, this.spec.type, p, this.spec.group) : streamKey(prefix, this.spec.type, p);
        this.keyIndex.set(key, this.streams.length);
        added.push(this.streams.length);
        this.streams.push({ key, partition: p, retry, cursor: '0-0', acks: [], ackHead: xackHead(key, this.spec.group), deletes: [], trimmedSeen: 0, trimmedUnreported: 0 });
      }
    }
    return added;
  }

  /**
   * The type's count was raised to `partitions`: the group is created on the new partition streams from their
   * start (events producers wrote there before this consumer noticed are read too), and new readers read them,
   * each opening its own connection. Raises are applied one after another; a lower count changes nothing.
   */
  follow(partitions: number): void {
    this.following = this.following.then(() => this.addPartitions(partitions));
  }

  private async addPartitions(partitions: number): Promise<void> {
    if (partitions <= this.partitions || this.ctx.closing) return;
    const from = this.partitions;
    this.partitions = partitions;
    const added = this.addStreams(from, partitions);
    this.deliveries.addStreams(added);
    // Groups on every stream again: BUSYGROUP where it exists, a new group at 0 on the new ones. A failure here
    // shows as NOGROUP at the new readers' first read, which creates the groups again.
    await ensureGroups(this.ctx, '0').catch((err: unknown) =>
      this.logger.warn({ err: describeError(err), group: this.spec.group }, 'creating the group on new partitions failed; retried at their first read'),
    );
    if (this.ctx.closing) return;
    for (const r of this.reads.add(added)) this.loops.push(this.readLoop(r));
    this.logger.info({ group: this.spec.group, type: this.spec.type, from, partitions }, 'reading the new partitions of a raised partition count from their start');
  }

  /** Why the subscription could not start, as a typed error (the Redis error as `cause`). */
  private startError(err: unknown): Error {
    if (err instanceof EventlaneError) return err;
    const msg = err instanceof Error ? err.message : String(err);
    const what = `Cannot create consumer group "${this.spec.group}" for ${this.spec.type} on ${this.connector.address}: ${msg}`;
    return isConnectionProblem(err) ? new ConnectionError(what, { cause: err }) : new TransportError(what, { cause: err });
  }

  // ---------------------------------------------------------------- reading

  /**
   * Reads for reader `r` until close, one step at a time in its reader's mode: the pending drain
   * (`drainStep`) while `r.drainPending`, else a read of new entries (`nextRead`) whose reply is taken
   * (`takeNew`, which may send the next read ahead); a failed step goes to `recover`.
   */
  private async readLoop(r: Reader): Promise<void> {
    const loop: ReadLoopState = { ahead: undefined, failures: 0 };
    while (!this.ctx.closing) {
      // A read already sent is taken in first: Redis has delivered its entries to this consumer, and
      // only entries held here are kept alive (left waiting, they could be reclaimed by another consumer).
      if (this.deliveries.full && loop.ahead === undefined) {
        await this.deliveries.waitForRoom();
        continue;
      }
      try {
        // No connection (the watchdog dropped one and could not open another yet): open it here.
        if (r.conn === undefined && !(await this.reconnect(r))) break;
        if (r.drainPending) {
          if (!(await this.drainStep(r))) break;
        } else {
          // Awaited in the loop itself (no async step between): a read reaches `takeNew` one promise hop after its reply.
          const reply = await this.nextRead(r, loop);
          if (this.ctx.closing) break;
          loop.ahead = this.takeNew(r, reply);
        }
        loop.failures = 0;
      } catch (err) {
        if (this.ctx.closing) break;
        loop.ahead = undefined;
        await this.recover(r, err, loop);
      }
    }
    reportTrimmed(this.ctx, r.streams);
  }

  /** Opens a read connection for `r`, which has none; false at close. */
  private async reconnect(r: Reader): Promise<boolean> {
    const conn = await this.reads.openUnlessClosed();
    if (conn === undefined) return false;
    this.reads.attach(r, conn);
    return true;
  }

  /** The read of new entries (`>`) to take next: the one sent ahead of the last reply, else a new one. */
  private nextRead(r: Reader, loop: ReadLoopState): Promise<ReadReply> {
    const next = loop.ahead ?? this.reads.readNew(r);
    loop.ahead = undefined;
    return next;
  }

  /**
   * After a failed read (not at close): an interrupted blocking read is simply read again; any other failure
   * starts a pending drain (what the read delivered may be lost), recreates the groups on NOGROUP, and
   * waits longer with each failure in a row.
   */
  private async recover(r: Reader, err: unknown, loop: ReadLoopState): Promise<void> {
    const msg = err instanceof Error ? err.message : String(err);
    if (!r.drainPending && msg.startsWith('UNBLOCKED')) {
      // The blocking read was ended with an error reply (CLIENT UNBLOCK ... ERROR; Redis does it too when the key
      // is deleted or the server turns replica): it delivered nothing and the connection is fine, so no pending
      // drain and no backoff. Whatever caused it, if it lasts, shows at the next read (NOGROUP, READONLY).
      this.logger.debug({ err: msg, group: this.spec.group }, 'blocking read interrupted (CLIENT UNBLOCK); reading again');
      return;
    }
    r.redrain();
    if (msg.includes('NOGROUP')) {
      this.logger.warn({ group: this.spec.group, type: this.spec.type }, 'consumer group or stream missing (NOGROUP); recreating it');
      try {
        await ensureGroups(this.ctx, '0');
      } catch (e) {
        this.logger.warn({ err: describeError(e) }, 'recreating consumer group failed');
      }
    } else {
      this.logger.warn({ err: msg, group: this.spec.group }, 'redis read failed; retrying');
    }
    loop.failures++;
    await this.sleep(Math.min(1000, 50 * loop.failures));
  }

  /**
   * One step of the serial pending drain: one entry per stream of this consumer's own pending list, each
   * started ahead of the read-ahead (`Deliveries.accept` queues redeliveries first) and finished before the
   * next is read, so an entry that kills the process is redelivered alone and only its own delivery count
   * grows. It reserves no handler slots: its read may wait out a stalled master, and a reservation held
   * meanwhile would keep the reclaim of the other masters' partitions from claiming. False at close.
   */
  private async drainStep(r: Reader): Promise<boolean> {
    const open = r.streams.map((_, k) => k).filter((k) => !r.drained[k]);
    const started: Entry[] = [];
    const reply = await this.reads.readPending(r, r.lastIds, open);
    if (this.ctx.closing) return false;
    const got = new Set<number>();
    for (const [key, entries] of reply ?? []) {
      if (entries.length === 0) continue;
      const idx = this.keyIndex.get(key)!;
      got.add(r.streams.indexOf(idx));
      r.lastIds[r.streams.indexOf(idx)] = entries[entries.length - 1]![0];
      // Redeliveries: their delivery counts give the attempt and stop crash loops.
      const fresh = this.deliveries.notHere(idx, entries);
      if (fresh.length > 0) this.deliveries.accept(idx, fresh, await this.reclaimer.deliveryCounts(idx, fresh), started);
    }
    for (const k of open) if (!got.has(k)) r.drained[k] = true;
    for (const k of got) await this.reclaimer.withdrawHeld(r.streams[k]!);
    await this.deliveries.finished(started);
    if (r.drained.every(Boolean)) {
      r.drainPending = false;
      r.lastIds.fill('0');
      r.drained.fill(false);
      reportTrimmed(this.ctx, r.streams);
    }
    return true;
  }

  /**
   * Takes a reply of new entries; returns the read sent ahead of it, if any. A full reply means a backlog: the
   * next read goes out before the reply is taken, so Redis prepares it while handlers run. A short one means
   * the reader is caught up: the next read waits until the handlers that finish at once have, and their acks go
   * out with it (one write, not two, per event at low rates).
   */
  private takeNew(r: Reader, reply: ReadReply): Promise<ReadReply> | undefined {
    if (!reply) return undefined;
    let got = 0;
    for (const [, entries] of reply) got += entries.length;
    let ahead: Promise<ReadReply> | undefined;
    // Not when a reconnect meanwhile asked for a pending drain: that read would queue behind a blocking one.
    if (got >= r.lastCount && r.conn !== undefined && !r.drainPending && !this.deliveries.full) {
      ahead = this.reads.readNew(r);
      ahead.catch(noop); // observed when awaited on the next turn
    }
    for (const [key, entries] of reply) this.deliveries.accept(this.keyIndex.get(key)!, entries, undefined);
    return ahead;
  }

  // ---------------------------------------------------------------- close

  /** Resolves after `ms`, or at close (whose clearing of `timers` would otherwise leave it pending forever). */
  private sleep(ms: number): Promise<void> {
    const slept = new Promise<void>((resolve) => {
      const t = setTimeout(() => {
        this.timers.delete(t);
        resolve();
      }, ms);
      this.timers.add(t);
    });
    return Promise.race([slept, this.closeSignal]);
  }

  /** The delivery engine's state, `reconnecting` while a read connection is not up (no round trip). */
  health(stallMs: number): SubscriptionProgress {
    const p = this.deliveries.progress(stallMs);
    return p.state === 'running' && !this.reads.allUp() ? { state: 'reconnecting', lastDeliveryAt: p.lastDeliveryAt } : p;
  }

  close(): Promise<void> {
    this.closed ??= this.doClose();
    return this.closed;
  }

  private async doClose(): Promise<void> {
    this.ctx.closing = true;
    this.signalClose();
    clearInterval(this.reclaimTimer);
    const cutReads = this.reads.stop();
    // Readers waiting for room wake; retries held until due are not started: they stay pending for a later consumer.
    this.deliveries.stop();
    for (const t of this.timers) clearTimeout(t);
    this.timers.clear();
    if (this.deliveries.busy) await this.deliveries.drainBusy();
    clearInterval(this.keepaliveTimer);
    this.deliveries.dropQueued();
    await this.keepalive.releaseUnstarted();
    await this.acks.drain();
    await Promise.allSettled(this.loops);
    await this.keepalive.releaseUnread(cutReads);
  }
}
