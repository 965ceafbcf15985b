/**
 * One consumer group of the memory transport: per-partition queues, members that own partitions,
 * in-flight tracking, retry with backoff and a bounded dead-letter list.
 *
 * A partition is handled by one member at a time: after a rebalance its new owner starts on it only once
 * the handlers the previous owner runs on it have finished (or were given up at the drain timeout), so
 * per-key order holds with `concurrency: 1` while members join and leave.
 */
import { Deque } from '../../src/deque.js';
import { DeliverySlice } from '../../src/next-turn.js';
import { DeliveryEngine, type RetryVerdict } from '../../src/delivery-engine.js';
import type { EventEnvelope } from '../../src/envelope.js';
import type { Logger } from '../../src/logger.js';
import type { DeadLetter, DeliveryContext, DeliveryHandler, OutgoingEvent, SubscriptionSpec, TransportSubscription } from '../../src/transport.js';

/**
 * An event with what a bare `OutgoingEvent` leaves implicit: published by a bus other than the one
 * whose service is the topic's default source (a broker shared by name), or coming back for another attempt.
 */
export class Tagged {
  constructor(
    readonly event: OutgoingEvent,
    readonly source: string,
    readonly attempt: number,
  ) {}
}

/** A queued event: bare (the topic's default source, first attempt) or tagged. */
export type Item = OutgoingEvent | Tagged;

/** A delivery under way: the event, where it came from, and its partition (held until it ends). */
interface Delivered {
  readonly event: OutgoingEvent;
  readonly source: string;
  readonly partition: number;
}

/** A member of the group: the delivery engine of one subscription, fed from the partitions it owns. */
class Member extends DeliveryEngine<Delivered> {
  partitions: number[] = [];
  cursor = 0;
  /** Given up by a drain, in the order they started: returned to the group by `leave`. */
  readonly givenUp: { readonly item: Tagged; readonly partition: number }[] = [];
  constructor(
    private readonly group: ConsumerGroup,
    override readonly spec: SubscriptionSpec,
    handler: DeliveryHandler,
    slice: DeliverySlice,
  ) {
    super(spec, handler, slice);
  }

  /** The first queued event of an owned partition that no other member still finishes, round robin. */
  protected startNext(): boolean {
    const parts = this.partitions;
    for (let k = 0; k < parts.length; k++) {
      const idx = (this.cursor + k) % parts.length;
      const p = parts[idx]!;
      const item = this.group.take(this, p);
      if (item === undefined) continue;
      this.cursor = idx + 1;
      const tagged = item instanceof Tagged;
      const d: Delivered = { event: tagged ? item.event : item, source: tagged ? item.source : this.group.source, partition: p };
      const ctx = { attempt: tagged ? item.attempt : 1, group: this.spec.group, consumer: this.spec.consumer, partition: p };
      this.startHandler(d, 0, toEnvelope(d.event, d.source), ctx);
      return true;
    }
    return false;
  }

  protected override ended(d: Delivered): void {
    this.group.release(d.partition);
  }

  protected succeeded(): void {}

  protected retry(d: Delivered, _i: number, _env: EventEnvelope, _ctx: DeliveryContext, next: RetryVerdict): void {
    this.group.retryLater(new Tagged(d.event, d.source, next.attempt), d.partition, next.delayMs);
  }

  protected dead(_d: Delivered, _i: number, _env: EventEnvelope, dl: DeadLetter): void {
    this.group.addDead(dl);
  }

  protected handBack(d: Delivered, _i: number, _env: EventEnvelope, ctx: DeliveryContext): void {
    this.givenUp.push({ item: new Tagged(d.event, d.source, ctx.attempt + 1), partition: d.partition });
    this.group.logger.warn({ group: this.spec.group, id: d.event.id }, 'handler outlived the drain timeout; event returned to the group');
  }

  /** A partition may have come free for another member too. */
  protected override resume(): void {
    this.group.pump();
  }
}

export function toEnvelope(ev: OutgoingEvent, source: string): EventEnvelope {
  const env: { -readonly [K in keyof EventEnvelope]: EventEnvelope[K] } = { id: ev.id, type: ev.type, source, time: ev.time, data: ev.data };
  if (ev.key !== undefined) env.key = ev.key;
  if (ev.correlationId !== undefined) env.correlationId = ev.correlationId;
  if (ev.causationId !== undefined) env.causationId = ev.causationId;
  // A copy: a handler that changes its headers must not change what other groups and later attempts see.
  if (ev.headers !== undefined) env.headers = { ...ev.headers };
  return env;
}

export class ConsumerGroup {
  readonly deadLetters: DeadLetter[] = [];
  private readonly queues: Deque<Item>[];
  private members: Member[] = [];
  /** Per partition: the member running handlers on it (and how many), which keeps it until they finish. */
  private readonly holder: (Member | undefined)[];
  private readonly held: number[];
  private readonly timers = new Set<NodeJS.Timeout>();
  /** The delivery slice of this turn, shared by the members (src/next-turn.ts). */
  private readonly slice = new DeliverySlice();

  constructor(
    readonly type: string,
    readonly name: string,
    partitions: number,
    /** Source of bare (untagged) events: the service of the bus that created the topic. */
    readonly source: string,
    private readonly maxDeadLetters: number,
    readonly logger: Logger,
  ) {
    this.queues = Array.from({ length: partitions }, () => new Deque<Item>());
    this.holder = new Array<Member | undefined>(partitions).fill(undefined);
    this.held = new Array<number>(partitions).fill(0);
  }

  enqueue(partition: number, items: readonly Item[]): void {
    this.queues[partition]!.pushAll(items);
    if (this.members.length > 0) this.pump();
  }

  join(spec: SubscriptionSpec, handler: DeliveryHandler): TransportSubscription {
    const member = new Member(this, spec, handler, this.slice);
    this.members.push(member);
    this.rebalance();
    // First delivery after an event-loop turn: members subscribing together all join before queued events
    // are shared out, and no handler runs inside subscribe().
    member.pumpLater();
    let closing: Promise<void> | undefined;
    return { close: () => (closing ??= this.leave(member)), health: (stallMs) => member.progress(stallMs) };
  }

  private rebalance(): void {
    for (const m of this.members) {
      m.partitions = [];
      m.cursor = 0;
    }
    if (this.members.length === 0) return;
    for (let p = 0; p < this.queues.length; p++) this.members[p % this.members.length]!.partitions.push(p);
  }

  private async leave(member: Member): Promise<void> {
    member.stopTaking();
    this.members = this.members.filter((m) => m !== member);
    this.rebalance();
    if (await member.drain(member.spec.drainTimeoutMs)) {
      // Handlers still running past the drain timeout: their events go back for another member, at the
      // front of their partitions in the order they were taken (so put back last first).
      member.giveUpRunning(member.spec.drainTimeoutMs);
      for (let i = member.givenUp.length - 1; i >= 0; i--) this.queues[member.givenUp[i]!.partition]!.unshift(member.givenUp[i]!.item);
      member.givenUp.length = 0;
    }
    this.pump();
  }

  /** Delivers what is queued to every member with free slots. */
  pump(): void {
    for (const m of this.members) m.pump();
  }

  /**
   * The next event of partition `p` for member `m`, counted as held by it; undefined when there is none or
   * the partition is still finishing on its previous owner.
   */
  take(m: Member, p: number): Item | undefined {
    const h = this.holder[p];
    if (h !== undefined && h !== m) return undefined;
    const item = this.queues[p]!.shift();
    if (item === undefined) return undefined;
    this.holder[p] = m;
    this.held[p]!++;
    return item;
  }

  release(partition: number): void {
    if (--this.held[partition]! === 0) this.holder[partition] = undefined;
  }

  addDead(dl: DeadLetter): void {
    this.deadLetters.push(dl);
    if (this.deadLetters.length > this.maxDeadLetters) this.deadLetters.shift();
  }

  /** `item` goes back to its partition after `delayMs` (a retry's backoff). */
  retryLater(item: Tagged, partition: number, delayMs: number): void {
    const timer = setTimeout(() => {
      this.timers.delete(timer);
      this.queues[partition]!.push(item);
      this.pump();
    }, delayMs);
    this.timers.add(timer);
  }

  /** Events not finished: queued, being handled, waiting for a retry. */
  unfinished(): number {
    let n = this.timers.size;
    for (let p = 0; p < this.queues.length; p++) n += this.queues[p]!.length + this.held[p]!;
    return n;
  }

  /** `bus.groupCounts()`: `lag` queued for delivery; `pending` being handled or waiting for a retry. */
  counts(): { lag: number; pending: number } {
    let lag = 0;
    let pending = this.timers.size;
    for (let p = 0; p < this.queues.length; p++) {
      lag += this.queues[p]!.length;
      pending += this.held[p]!;
    }
    return { lag, pending };
  }

  stopTimers(): void {
    for (const t of this.timers) clearTimeout(t);
    this.timers.clear();
  }
}
