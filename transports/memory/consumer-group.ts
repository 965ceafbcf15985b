/**
 * One consumer group of the memory transport: per-partition queues, members that own partitions,
 * in-flight tracking, retry with backoff and a bounded dead-letter list.
 *
 * A partition is handled by one member at a time: after a rebalance its new owner starts on it only once
 * the handlers the previous owner runs on it have finished (or were given up at the drain timeout), so
 * per-key order holds with `concurrency: 1` while members join and leave.
 */
import { Deque } from '../../src/deque.js';
import { DeliverySlice, NextTurn } from '../../src/next-turn.js';
import type { EventEnvelope } from '../../src/envelope.js';
import type { Logger } from '../../src/logger.js';
import { delay, runHandler } from '../../src/run-handler.js';
import { afterFailure, deadLetterOf, isLastAttempt, outlivedDrain } from '../../src/delivery-rules.js';
import type { DeadLetter, DeliveryHandler, OutgoingEvent, SubscriptionSpec, TransportSubscription } from '../../src/transport.js';

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

interface Active {
  event: OutgoingEvent;
  source: string;
  partition: number;
  attempt: number;
  settled: boolean;
}

class Member {
  inFlight = 0;
  partitions: number[] = [];
  cursor = 0;
  closing = false;
  readonly active = new Set<Active>();
  onIdle: (() => void) | undefined;
  constructor(
    readonly spec: SubscriptionSpec,
    readonly handler: DeliveryHandler,
  ) {
    // Written twice so V8 never treats it as a constant (see EventBus's constructor in src/bus.ts).
    this.closing = true;
    this.closing = false;
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
  private pumping = false;
  private again = false;

  constructor(
    readonly type: string,
    readonly name: string,
    partitions: number,
    /** Source of bare (untagged) events: the service of the bus that created the topic. */
    private readonly source: string,
    private readonly maxDeadLetters: number,
    private readonly logger: Logger,
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
    const member = new Member(spec, handler);
    this.members.push(member);
    this.rebalance();
    // First delivery after an event-loop turn: members subscribing together all join before queued events
    // are shared out, and no handler runs inside subscribe().
    this.nextTurn.request();
    let closing: Promise<void> | undefined;
    return { close: () => (closing ??= this.leave(member)) };
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
    member.closing = true;
    this.members = this.members.filter((m) => m !== member);
    this.rebalance();
    if (member.inFlight > 0) {
      const timeout = delay(member.spec.drainTimeoutMs);
      await Promise.race([new Promise<void>((resolve) => (member.onIdle = resolve)), timeout.promise]);
      timeout.cancel();
      // Handlers still running past the drain timeout: their events go back for another member, at the
      // front of their partitions in the order they were taken (so put back last first).
      const stuck = [...member.active];
      for (let i = stuck.length - 1; i >= 0; i--) {
        const a = stuck[i]!;
        a.settled = true;
        this.release(a.partition);
        // That delivery counts: one that was the last allowed is dead-lettered, not run again by another member.
        if (isLastAttempt(member.spec, a.attempt)) {
          this.addDead(outlivedDrain(toEnvelope(a.event, a.source), this.name, a.partition, a.attempt, member.spec.drainTimeoutMs));
          continue;
        }
        this.queues[a.partition]!.unshift(new Tagged(a.event, a.source, a.attempt + 1));
        this.logger.warn({ group: this.name, id: a.event.id }, 'handler outlived the drain timeout; event returned to the group');
      }
      member.active.clear();
    }
    this.pump();
  }

  private readonly nextTurn = new NextTurn(() => this.pump());
  /** This turn's delivery slice (pumps run by async handlers settling count against it too). */
  private readonly slice = new DeliverySlice();

  /** Delivers what is queued, for at most DELIVERY_SLICE_MS per event-loop turn (DeliverySlice); the rest after a turn. */
  private pump(): void {
    if (this.pumping) {
      this.again = true;
      return;
    }
    if (!this.slice.begin()) {
      this.nextTurn.request();
      return;
    }
    this.pumping = true;
    try {
      do {
        this.again = false;
        for (const m of this.members) {
          if (!this.fill(m)) {
            this.nextTurn.request();
            return;
          }
        }
      } while (this.again);
    } finally {
      this.pumping = false;
    }
  }

  /** Fills a member's free handler slots; false when the time slice ran out first. */
  private fill(m: Member): boolean {
    const parts = m.partitions;
    while (!m.closing && m.inFlight < m.spec.concurrency) {
      if (this.slice.over()) return false;
      let found = false;
      for (let k = 0; k < parts.length; k++) {
        const idx = (m.cursor + k) % parts.length;
        const p = parts[idx]!;
        const h = this.holder[p];
        if (h !== undefined && h !== m) continue; // still finishing on its previous owner
        const item = this.queues[p]!.shift();
        if (item !== undefined) {
          m.cursor = idx + 1;
          this.deliver(m, p, item);
          found = true;
          break;
        }
      }
      if (!found) return true;
    }
    return true;
  }

  private deliver(m: Member, partition: number, item: Item): void {
    const tagged = item instanceof Tagged;
    const event = tagged ? item.event : item;
    const source = tagged ? item.source : this.source;
    const attempt = tagged ? item.attempt : 1;
    const active: Active = { event, source, partition, attempt, settled: false };
    m.inFlight++;
    m.active.add(active);
    this.holder[partition] = m;
    this.held[partition]!++;
    runHandler(m.handler, toEnvelope(event, source), { attempt, group: this.name, consumer: m.spec.consumer, partition }, (err, failed) => {
      if (active.settled) return; // returned to the group after a drain timeout
      active.settled = true;
      m.active.delete(active);
      m.inFlight--;
      this.release(partition);
      if (failed) this.fail(m.spec, event, source, partition, attempt, err);
      if (m.inFlight === 0 && m.onIdle) m.onIdle();
      this.pump();
    });
  }

  private release(partition: number): void {
    if (--this.held[partition]! === 0) this.holder[partition] = undefined;
  }

  private addDead(dl: DeadLetter): void {
    this.deadLetters.push(dl);
    if (this.deadLetters.length > this.maxDeadLetters) this.deadLetters.shift();
    this.logger.warn({ group: this.name, id: dl.id, attempts: dl.attempts, err: dl.error }, 'event dead-lettered');
  }

  private fail(spec: SubscriptionSpec, event: OutgoingEvent, source: string, partition: number, attempt: number, err: unknown): void {
    const verdict = afterFailure(spec, attempt, err);
    if (!verdict.retry) {
      this.addDead(deadLetterOf(toEnvelope(event, source), this.name, partition, attempt, verdict.error));
      return;
    }
    const timer = setTimeout(() => {
      this.timers.delete(timer);
      this.queues[partition]!.push(new Tagged(event, source, verdict.attempt));
      this.pump();
    }, verdict.delayMs);
    this.timers.add(timer);
  }

  /** Events not finished: queued, being handled, waiting for a retry. */
  unfinished(): number {
    let n = this.timers.size;
    for (let p = 0; p < this.queues.length; p++) n += this.queues[p]!.length + this.held[p]!;
    return n;
  }

  stopTimers(): void {
    for (const t of this.timers) clearTimeout(t);
    this.timers.clear();
  }
}
