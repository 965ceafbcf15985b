/**
 * The handler slots of a Redis Streams subscription (`concurrency` of them) and the starting of events in
 * them. Entries waiting to start sit in two queues: redeliveries (`urgent`, started first) and the
 * read-ahead (`queue`). A redelivery about to be claimed or read reserves slots first (`reserve`, granted
 * in order), so every entry it gets starts at once; while a request waits, and inside granted slots, no
 * entry of the read-ahead starts. `pump` starts events while slots are free. What running an event means,
 * and what happens when it ends, is the subclass's (deliveries.ts).
 */
import { Deque } from '../../src/deque.js';
import { DeliveryEngine } from '../../src/delivery-engine.js';
import type { DeliveryHandler } from '../../src/transport.js';
import type { ConsumerContext, Entry } from './consumer-records.js';

/** How long a slot reservation waits for all the slots it asks for before it takes those free (`reserve`). */
const RESERVE_WAIT_MS = 100;

/** A redelivery's request for handler slots (`reserve`), granted in order. */
interface SlotRequest {
  want: number;
  /** Waited RESERVE_WAIT_MS: granted the slots free now, however few. */
  expired: boolean;
  timer: NodeJS.Timeout | undefined;
  grant: (slots: number) => void;
}

export abstract class HandlerSlots extends DeliveryEngine<Entry> {
  /** Entries read (`>`) and due, in read order: the read-ahead. */
  protected readonly queue = new Deque<Entry>();
  /**
   * Redeliveries (pending drain, reclaim), claimed or read into slots reserved for them (`reserve`): started
   * before any entry of `queue`, at once (a batch entry's later events wait for its earlier ones' slots).
   */
  protected readonly urgent = new Deque<Entry>();
  /**
   * Slot requests waiting (`reserve`): while any waits, no entry of `queue` starts, so running handlers free
   * slots as they finish.
   */
  private readonly requests: SlotRequest[] = [];
  /** Slots granted to redeliveries and not released yet (`release`): no entry of `queue` starts in them. */
  private promised = 0;

  constructor(
    protected readonly ctx: ConsumerContext,
    handler: DeliveryHandler,
  ) {
    super(ctx.spec, handler);
  }

  /** Called after each pump: wakes whoever waits for the subscription to be idle. */
  protected abstract checkIdle(): void;

  /**
   * Reserves handler slots for a redelivery about to be claimed or read (at most `want`, at most
   * `concurrency`), so that every entry it gets starts at once: Redis counts a claim or a re-read as a
   * delivery, and a consumer's death charges one to every entry it holds, started or not. While a request
   * waits, no entry of the read-ahead (`queue`) starts, so slots free up as running handlers finish.
   * Resolves with `want` slots once they are free; after RESERVE_WAIT_MS with those free then (maybe 0); at
   * close with 0. The caller takes no more entries than it was granted slots, `accept`s them (they start
   * at once), then calls `release` with the grant, in every case.
   */
  reserve(want: number): Promise<number> {
    if (this.ctx.closing) return Promise.resolve(0);
    return new Promise<number>((resolve) => {
      const req: SlotRequest = { want: Math.max(1, Math.min(want, this.ctx.spec.concurrency)), expired: false, timer: undefined, grant: resolve };
      req.timer = setTimeout(() => {
        req.expired = true;
        this.pump();
      }, RESERVE_WAIT_MS);
      this.requests.push(req);
      this.pump();
    });
  }

  /** Gives back slots granted by `reserve` (those the entries accepted into them did not fill end up free). */
  release(slots: number): void {
    this.promised -= slots;
    this.pump();
  }

  /** Slots neither running a handler, nor granted, nor awaited by a redelivery's events not started yet. */
  private freeSlots(): number {
    let waiting = 0;
    for (const e of this.urgent.toArray()) waiting += e.events.length - e.cursor;
    return this.ctx.spec.concurrency - this.running - this.promised - waiting;
  }

  /** Grants the slot requests that can be, in order (at close: all, with 0 slots); true if any was (the read-ahead may start again). */
  protected grantSlots(): boolean {
    let any = false;
    while (this.requests.length > 0) {
      const req = this.requests[0]!;
      const free = Math.max(0, this.freeSlots());
      if (free < req.want && !req.expired && !this.ctx.closing) break;
      this.requests.shift();
      clearTimeout(req.timer);
      const slots = this.ctx.closing ? 0 : Math.min(req.want, free);
      this.promised += slots;
      req.grant(slots);
      any = true;
    }
    return any;
  }

  /**
   * The next event to start (DeliveryEngine.pump calls this while a slot is free): redeliveries (`urgent`)
   * first; the read-ahead (`queue`) only while no slot request waits and outside granted slots.
   */
  protected startNext(): boolean {
    for (;;) {
      let q = this.urgent;
      if (q.length === 0) {
        if (this.requests.length > 0 || this.running + this.promised >= this.ctx.spec.concurrency) return false;
        q = this.queue;
      }
      const entry = q.peek();
      if (entry === undefined) return false;
      if (entry.cursor >= entry.events.length) {
        q.shift(); // abandoned while queued
        continue;
      }
      const i = entry.cursor++;
      if (entry.cursor >= entry.events.length) q.shift();
      this.startHandler(entry, i, entry.events[i]!, entry.ctx);
      return true;
    }
  }

  /** After each pump: slot requests are granted as slots free up (and the read-ahead may start again). */
  protected override afterPump(): void {
    if (this.requests.length > 0 && this.grantSlots()) this.pump();
    else this.checkIdle();
  }
}
