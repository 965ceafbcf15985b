/**
 * The entries a Redis Streams subscription holds and the running of their events' handlers: entries read
 * or claimed are decoded and held (retries until due), their events run `concurrency` at once, and an entry
 * is acked when all its events are done (succeeded, re-routed to retry or DLQ) or abandoned when it is no
 * longer this consumer's. Counts what is held, for the readers' prefetch and for close. The slots and the
 * order events start in are handler-slots.ts's; the retry/DLQ writes' retries are reroute-writes.ts's.
 */
import { pastLastAttempt } from '../../src/delivery-rules.js';
import type { JsonReader } from '../../src/json-reader.js';
import type { RetryVerdict } from '../../src/delivery-engine.js';
import type { EventEnvelope } from '../../src/envelope.js';
import type { DeadLetter, DeliveryContext, DeliveryHandler } from '../../src/transport.js';
import type { AckBatcher } from './ack-batch.js';
import { decodeEntry, Malformed, type DecodedEntry } from './decode-entry.js';
import { Entry, type ConsumerContext, type RawEntry } from './consumer-records.js';
import { trimmedPending } from './housekeeping.js';
import { HandlerSlots } from './handler-slots.js';
import type { Reroute } from './reroute.js';
import { RerouteWrites } from './reroute-writes.js';

/** An entry not held for its handlers whose retry/DLQ write is outstanding (`sideOp`): kept this consumer's by the keepalive. */
export interface Pinned {
  claimedAt: number;
  /** Found no longer pending on this consumer (another reclaimed it): its write is not tried again. */
  lost: boolean;
}

export class Deliveries extends HandlerSlots {
  /** Entries read and not yet acked, per stream index, by entry id. */
  readonly held: Map<string, Entry>[] = [];
  /** Entries whose retry/DLQ write is outstanding and that no handler holds, per stream index, by entry id. */
  readonly pinned: Map<string, Pinned>[] = [];
  heldEntries = 0;
  heldEvents = 0;
  /** Events per entry, learnt from reads (sizes the reads' COUNT). */
  avgEvents: number;
  readonly prefetch: number;
  /**
   * Redelivered entries held for their due time (retries), per stream index: the caller of `accept` withdraws
   * the delivery their claim counted (`takeHeldRedeliveries`), since no handler starts on them now.
   */
  private readonly heldRedeliveries: Entry[][] = [];
  /** Shared delivery context of first attempts, per stream index. */
  private readonly firstCtx: DeliveryContext[] = [];
  /** Retries waiting for their due time. */
  private readonly timers = new Set<NodeJS.Timeout>();
  private sideOps = 0;
  private roomWaiters: (() => void)[] = [];
  private busyWaiters: (() => void)[] = [];
  /** The longest a retry waits for its due time here: backoff.maxMs with the most jitter. */
  private readonly longestBackoff: number;
  /** The retry/DLQ writes of failed events and of whole entries (`fail`, `sideOp`). */
  private readonly writes: RerouteWrites;

  constructor(
    ctx: ConsumerContext,
    handler: DeliveryHandler,
    /** Parses per-event entries' payloads (compiled from the type's reader plan where there is one). */
    private readonly readData: JsonReader,
    private readonly acks: AckBatcher,
    private readonly reroute: Reroute,
  ) {
    super(ctx, handler);
    const { spec } = ctx;
    this.writes = new RerouteWrites(ctx);
    this.prefetch = ctx.opts.prefetch;
    this.longestBackoff = Math.ceil(spec.backoff.maxMs * (1 + spec.backoff.jitter));
    // The first read assumes full batch entries so it cannot pull a huge backlog at once.
    this.avgEvents = ctx.config.entryMode === 'event' ? 1 : 4000;
    this.addStreams(ctx.streams.keys());
  }

  /** Records for streams of the subscription (indices into `ctx.streams`, in order, each next one). */
  addStreams(indices: Iterable<number>): void {
    const { spec, streams } = this.ctx;
    for (const idx of indices) {
      this.held.push(new Map());
      this.pinned.push(new Map());
      this.heldRedeliveries.push([]);
      this.firstCtx.push({ attempt: 1, group: spec.group, consumer: spec.consumer, partition: streams[idx]!.partition });
    }
  }

  /** As many events held as prefetch allows: readers wait (`waitForRoom`). */
  get full(): boolean {
    return this.heldEvents >= this.prefetch;
  }

  /**
   * The redelivered entries of stream `idx` that `accept` held for their due time since the last call (retries
   * not due yet): no handler starts on them now, so the caller withdraws the delivery their claim counted.
   */
  takeHeldRedeliveries(idx: number): Entry[] {
    const held = this.heldRedeliveries[idx]!;
    return held.length === 0 ? held : held.splice(0);
  }

  /** Resolves when events held fall below prefetch, or at close. */
  waitForRoom(): Promise<void> {
    return new Promise<void>((resolve) => this.roomWaiters.push(resolve));
  }

  /** Handlers running, events queued or re-routes outstanding. */
  get busy(): boolean {
    return this.running > 0 || this.queue.length > 0 || this.urgent.length > 0 || this.sideOps > 0;
  }

  /**
   * At close: wakes the readers; entries read but not started, and retries held until due, are not started
   * (they stay held, then pending for a later consumer: see `Keepalive.releaseUnstarted`). A batch entry
   * whose events have begun keeps running the rest, so its finished events are not delivered again.
   */
  stop(): void {
    this.wakeReaders();
    this.grantSlots(); // closing: each waiting request gets 0
    for (const t of this.timers) clearTimeout(t);
    this.timers.clear();
    // pump() starts events in queue order and shifts an entry once all its events started: only a head can be part-way.
    for (const q of [this.urgent, this.queue]) {
      const head = q.peek();
      q.clear();
      if (head !== undefined && head.cursor > 0 && head.cursor < head.events.length) q.push(head);
    }
  }

  /** Resolves when nothing is busy any more, or after drainTimeoutMs (warning of handlers still running). */
  async drainBusy(): Promise<void> {
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([new Promise<void>((resolve) => this.busyWaiters.push(resolve)), new Promise<void>((resolve) => (timer = setTimeout(resolve, this.ctx.spec.drainTimeoutMs)))]);
    clearTimeout(timer);
    if (this.running > 0) this.ctx.logger.warn({ group: this.ctx.spec.group, running: this.running }, 'handlers outlived the drain timeout; their entries stay pending');
  }

  /** After a drain timeout: events queued and not started are dropped (their entries stay held, and pending). */
  dropQueued(): void {
    this.queue.clear();
    this.urgent.clear();
  }

  /**
   * Whether entry `id` of stream `idx` is already here (a pending re-read after a reconnect, a reclaim): held,
   * its retry/DLQ write outstanding, or finished with its XACK not through yet.
   */
  here(idx: number, id: string): boolean {
    return this.held[idx]!.has(id) || this.pinned[idx]!.has(id) || this.acks.acking(this.ctx.streams[idx]!, id);
  }

  /**
   * The entries of a redelivery (pending re-read, reclaim) not already here, taken as the reply arrives: an
   * XACK answered while the caller then awaits delivery counts would make a finished entry look new.
   */
  notHere(idx: number, entries: RawEntry[]): RawEntry[] {
    return entries.filter((e) => !this.here(idx, e[0]));
  }

  /** Takes entries read or claimed from stream `idx`. `deliveries` (reclaim) maps id to delivery count. */
  accept(idx: number, entries: RawEntry[], deliveries: Map<string, number> | undefined, started?: Entry[]): void {
    const s = this.ctx.streams[idx]!;
    const held = this.held[idx]!;
    const now = Date.now();
    let events = 0;
    let trimmed = 0;
    for (let k = 0; k < entries.length; k++) {
      const raw = entries[k]!;
      const id = raw[0];
      // A new entry ('>' read) cannot be here yet; a redelivery may be (see `here`).
      if (deliveries === undefined ? held.has(id) : this.here(idx, id)) continue;
      const fields = raw[1];
      if (fields === null) {
        // Deleted or trimmed while pending: nothing to deliver.
        this.acks.ack(idx, id);
        if (!s.retry) trimmed++;
        continue;
      }
      events += this.take(idx, id, fields, deliveries, now, started);
    }
    // One warning with their count, not one per entry: the serial pending drain (`started`, one entry per read)
    // adds them up and reports when it ends.
    if (trimmed > 0) {
      if (started !== undefined) s.trimmedUnreported += trimmed;
      else trimmedPending(this.ctx, s, trimmed);
    }
    if (entries.length > 0) this.avgEvents = Math.max(1, (this.avgEvents + events / entries.length) / 2);
    this.pump();
  }

  /**
   * Decodes entry `id` of stream `idx` and holds it: queued to start (a redelivery, `deliveries` given, ahead
   * of the read-ahead, and listed in `started`), or kept until due. A malformed entry, and a redelivery that
   * goes to the retry stream or the DLQ instead (`redeliveryAttempt`), are re-routed; an entry with no events
   * is acked. Returns the events held.
   */
  private take(idx: number, id: string, fields: string[], deliveries: Map<string, number> | undefined, now: number, started: Entry[] | undefined): number {
    const s = this.ctx.streams[idx]!;
    const decoded = decodeEntry(id, fields, this.ctx.spec.type, this.readData, s.retry);
    if (decoded instanceof Malformed) {
      this.sideOp(() => this.reroute.malformed(idx, id, fields, `malformed entry: ${decoded.reason}`), idx, id);
      return 0;
    }
    let attempt = decoded.attempt;
    const delivered = deliveries?.get(id);
    if (delivered !== undefined && delivered > 1) {
      attempt = this.redeliveryAttempt(idx, id, decoded, delivered);
      if (attempt === 0) return 0;
    }
    const delivery: DeliveryContext = attempt === 1 ? this.firstCtx[idx]! : { attempt, group: this.ctx.spec.group, consumer: this.ctx.spec.consumer, partition: s.partition };
    const entry = new Entry(idx, id, decoded.events, delivery, attempt);
    if (deliveries !== undefined) entry.deliveries = delivered;
    if (entry.remaining === 0) {
      this.acks.ack(idx, id);
      return 0;
    }
    const events = entry.remaining;
    this.held[idx]!.set(id, entry);
    this.heldEntries++;
    this.heldEvents += events;
    if (decoded.due > now) {
      this.holdUntilDue(entry, decoded.due - now);
    } else {
      (deliveries === undefined ? this.queue : this.urgent).push(entry);
      started?.push(entry);
    }
    return events;
  }

  /**
   * The attempt of an entry Redis delivered `delivered` (> 1) times: each delivery without an ack is one a
   * consumer died on. 0 when the entry is re-routed instead: past maxDeliveries, to the DLQ (a crash loop);
   * a batch entry, split into per-event retry entries, so an event that kills its consumer is isolated (and
   * dead-lettered alone) instead of its batch.
   */
  private redeliveryAttempt(idx: number, id: string, decoded: DecodedEntry, delivered: number): number {
    const attempt = decoded.attempt + delivered - 1;
    if (pastLastAttempt(this.ctx.spec, attempt)) {
      const written = new Set<number>();
      const reason = `delivered ${delivered} times without an ack (consumers died while handling it)`;
      this.sideOp(() => this.reroute.crashLoop(idx, id, decoded.events, attempt - 1, reason, written), idx, id);
      return 0;
    }
    if (decoded.events.length > 1) {
      const written = new Set<number>();
      this.sideOp(() => this.reroute.split(idx, id, decoded.events, attempt, written), idx, id);
      return 0;
    }
    return attempt;
  }

  /**
   * A retry not due yet, queued (`queue`) when it is. `due` is the writer's clock: another host's may run ahead
   * of ours by minutes (or a hand-written entry say anything), so a retry waits no longer than this consumer's
   * own longest backoff. A redelivered one is listed for `takeHeldRedeliveries`.
   */
  private holdUntilDue(entry: Entry, ms: number): void {
    if (entry.deliveries !== undefined) this.heldRedeliveries[entry.stream]!.push(entry);
    const t = setTimeout(
      () => {
        this.timers.delete(t);
        this.queue.push(entry);
        this.pump();
      },
      Math.min(ms, this.longestBackoff),
    );
    this.timers.add(t);
  }

  /** A handler ended: its event is no longer held (whatever its outcome; readers may read again). */
  protected override ended(): void {
    this.heldEvents--;
    if (this.roomWaiters.length > 0 && !this.full) this.wakeReaders();
  }

  protected succeeded(entry: Entry): void {
    if (--entry.remaining === 0) this.complete(entry);
  }

  protected retry(entry: Entry, i: number, _env: EventEnvelope, _ctx: DeliveryContext, next: RetryVerdict, err: unknown): void {
    this.rerouteEvent(entry, () => this.reroute.retried(entry, i, next, err));
  }

  protected dead(entry: Entry, i: number, _env: EventEnvelope, dl: DeadLetter): void {
    this.rerouteEvent(entry, () => this.reroute.deadLettered(entry, i, dl));
  }

  /**
   * Not called: a Redis subscription does not give up handlers at its drain (`drainBusy`); what outlived it
   * stays pending on this consumer, and its delivery count charges the attempt to its next consumer.
   */
  protected handBack(): void {}

  private complete(entry: Entry): void {
    if (entry.abandoned) return;
    if (this.held[entry.stream]!.delete(entry.id)) this.heldEntries--;
    this.acks.ack(entry.stream, entry.id);
    entry.done?.();
  }

  wakeReaders(): void {
    const w = this.roomWaiters;
    this.roomWaiters = [];
    for (const f of w) f();
  }

  /** A failed event's retry or dead-letter write (`write`); its entry is acked once all its events are done. */
  private rerouteEvent(entry: Entry, write: () => Promise<unknown>): void {
    // Abandoned (another consumer has the entry now, or it stays pending for a redelivery): the event runs
    // again there, so no retry entry or dead letter from here.
    if (entry.abandoned) return;
    this.sideOps++;
    void this.writes
      .persist(write, () => !entry.abandoned, entry.id)
      .then((written) => {
        this.sideOps--;
        if (written) {
          if (--entry.remaining === 0) this.complete(entry);
        } else if (!entry.abandoned) {
          // Could not re-route: leave the whole entry pending; it is reclaimed after minIdleMs.
          this.abandon(entry);
        }
        this.checkIdle();
      });
  }

  /** A retry/DLQ write for a whole entry no handler holds (malformed, crash loop, split): acked once written. */
  private sideOp(write: () => Promise<unknown>, idx: number, id: string): void {
    this.sideOps++;
    const pin: Pinned = { claimedAt: Date.now(), lost: false };
    this.pinned[idx]!.set(id, pin);
    void this.writes
      .persist(write, () => !pin.lost, id)
      .then((written) => {
        this.sideOps--;
        if (this.pinned[idx]!.get(id) === pin) this.pinned[idx]!.delete(id);
        if (written) this.acks.ack(idx, id);
        this.checkIdle();
      });
  }

  /** Resolves when the entries started are done (acked, or re-routed) or abandoned, or at close. */
  async finished(started: Entry[]): Promise<void> {
    const unfinished = started.filter((e) => !e.abandoned && this.held[e.stream]!.has(e.id));
    if (unfinished.length > 0) await Promise.race([Promise.all(unfinished.map((e) => new Promise<void>((resolve) => (e.done = resolve)))), this.ctx.closeSignal]);
  }

  /**
   * Stops handling an entry that stays pending (for its new owner, or for a later reclaim): events not
   * started are skipped, and it is not acked.
   */
  abandon(entry: Entry): void {
    entry.abandoned = true;
    this.heldEvents -= entry.events.length - entry.cursor;
    entry.cursor = entry.events.length;
    if (this.held[entry.stream]!.delete(entry.id)) this.heldEntries--;
    entry.done?.();
    if (this.roomWaiters.length > 0 && !this.full) this.wakeReaders();
  }

  protected checkIdle(): void {
    if (this.busyWaiters.length > 0 && this.running === 0 && this.queue.length === 0 && this.urgent.length === 0 && this.sideOps === 0) {
      const w = this.busyWaiters;
      this.busyWaiters = [];
      for (const f of w) f();
    }
  }
}
