/**
 * Delivers the events of a set of partitions of one lane to a handler: batches popped from the core,
 * `concurrency` handlers at once, retry with backoff, dead-lettering after `maxDeliveries`. The same class
 * runs on the main thread (`pump()`, never blocking) and in a worker thread (`run()`, waiting in the core
 * with a bounded spin-then-sleep so `close()` and `worker.terminate()` never hang).
 */
import { Deque } from '../../src/deque.js';
import { DeliverySlice, NextTurn } from '../../src/next-turn.js';
import type { EventEnvelope } from '../../src/envelope.js';
import type { BackoffOptions, DeadLetter, DeliveryContext, DeliveryHandler } from '../../src/transport.js';
import type { PartitionCore } from '../../native/js/core-api.js';
import { jsonReader, type JsonReader, type ReaderPlan } from '../../src/json-reader.js';
import { decodeRecords } from './record-decode.js';
import type { InFlightTable } from './in-flight.js';
import { afterFailure, deadLetterOf, isLastAttempt, outlivedDrain } from '../../src/delivery-rules.js';

export interface ConsumerSettings {
  readonly type: string;
  readonly source: string;
  readonly group: string;
  readonly consumer: string;
  readonly concurrency: number;
  readonly maxDeliveries: number;
  readonly backoff: BackoffOptions;
  /** Most records per pop. */
  readonly batchSize: number;
  /** Decode payloads on first `event.data` access (worker threads). */
  readonly lazy: boolean;
  /**
   * Keep popped records in the ring until their events are finished (worker threads, so the main thread can
   * take them back if the thread dies); otherwise they are released as they are popped.
   */
  readonly hold: boolean;
  /** The payload's reader plan (schema-compiled parsing), or undefined for JSON.parse. */
  readonly reader: ReaderPlan | undefined;
}

/** An event waiting for (another) delivery. Structured-cloneable, so workers can hand it back. */
export interface Pending {
  env: EventEnvelope;
  attempt: number;
  partition: number;
  /**
   * Runs alone: its consumer starts it once no other handler runs, and starts nothing else until it is
   * finished (an event that was running when a thread died; see ThreadDeaths.recover).
   */
  alone?: true;
}

interface Active extends Pending {
  settled: boolean;
  batch: HeldBatch | undefined;
  index: number;
  /** Its slot in the consumer's InFlightTable (-1 without one). */
  slot: number;
}

/**
 * Records popped with `hold`, acknowledged in the core as their events finish: every ACK_EVERY finished
 * events and at the end (so a thread that dies has few finished events to be delivered again). In order,
 * that is the finished prefix; events that finish out of order (concurrency > 1) are acknowledged in runs
 * (the core takes acks in any order), so one slow event does not hold back the acknowledgement of the
 * events after it.
 */
interface HeldBatch {
  partition: number;
  first: number;
  count: number;
  /** Events [0, acked) are acknowledged. */
  acked: number;
  /** Events [0, next) are finished. */
  next: number;
  /** Once events finish out of order (concurrency > 1), each event's state: 0 running or waiting, 1 finished, 2 acknowledged. */
  done: Uint8Array | undefined;
  /** Events finished and not acknowledged. */
  unacked: number;
}

const ACK_EVERY = 64;

const yieldMacrotask = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

export class PartitionConsumer {
  private parts = new Uint32Array(0);
  private nParts = 0;
  private cursor = 0;
  private readonly info = new Uint32Array(3);
  private readonly offs: Uint32Array;
  private batch: EventEnvelope[] = [];
  private batchIdx = 0;
  private batchPart = 0;
  /** The held records of `batch` (hold mode). */
  private batchHeld: HeldBatch | undefined;
  /** Every batch popped with `hold` and not yet acknowledged. */
  private readonly held = new Set<HeldBatch>();
  /** Held records of the event last returned by `next()` (undefined for a retry or a handed-over event), and its index there. */
  private curBatch: HeldBatch | undefined;
  private curIndex = 0;
  /** Events handed back or due for retry; delivered before new ones. */
  private readonly redo = new Deque<Pending>();
  private readonly timers = new Map<NodeJS.Timeout, Pending>();
  private readonly active = new Set<Active>();
  private inFlight = 0;
  private pumping = false;
  private stopped = false;
  private slotWaiter: (() => void) | undefined;
  private idleWaiter: (() => void) | undefined;
  private wakeScheduled = false;
  private curAttempt = 1;
  private curPart = 0;
  /** Set in main-thread mode: how to come back after a handler settles or a retry is due. */
  mainThread = false;
  /**
   * Worker threads: a shared cell where the thread publishes how many events it holds (popped or handed
   * over and not finished). Increases are published at once (pop, retry, hand-over), decreases every 64
   * events, so the cell is an upper bound; read by bus.idle() (the group's `unfinished`) and, under
   * drop-oldest, by the main thread if the thread dies (what it lost; otherwise what it held is taken back).
   * Set in every worker thread, and only there: a worker under drop-oldest pops with `hold` as well (see
   * `countThenAck`).
   */
  heldCell: Int32Array | undefined;
  /**
   * Worker threads: an event that is not (or no longer) held in the ring, because it waits for a retry, is
   * reported here so the main thread keeps a copy for as long as it is not finished...
   */
  onPark: ((item: Pending) => void) | undefined;
  /** ...and an event finished that was parked (or handed over by the main thread). */
  onUnpark: ((id: string) => void) | undefined;
  /**
   * Worker threads: the events whose handlers run, in shared memory, so if the thread dies the main thread
   * knows which events it had started (see `started` and in-flight.ts).
   */
  handling: InFlightTable | undefined;
  /** Ids of the events given to run alone (Pending.alone) and not finished yet. */
  private readonly soloIds = new Set<string>();
  /** The event running alone, if one is: nothing else starts until it settles. */
  private solo: Active | undefined;
  /**
   * Worker threads: the topic's per-partition count of consumer threads blocked waiting for events, then
   * its count of waits. The thread counts itself in (and a new wait) before a pop that may sleep and out
   * after it, so the bus sends a publish() at once, once per wait (`Transport.sendNowProbe`, wait-probe.ts). `waitingMine` records what it added ([n, parts...]),
   * so the main thread can take it off if the thread is terminated inside the pop.
   */
  waitingCell: Int32Array | undefined;
  waitingMine: Int32Array | undefined;
  /**
   * Worker threads: the mark the core puts on the records this thread holds (> 0, unique in its group), so
   * that if it dies the main thread takes back its records alone, not those another thread holds in the
   * same ring (a partition that moved in a rebalance while the thread still held some of its records).
   */
  holder = 0;

  /**
   * The handler of `env` starts: it is named in `handling` until it settles (`handling.finish` of the slot
   * returned; -1 without a table). An event of a held batch with one handler at a time is named by where it
   * is: the k-th record the thread still holds in its partition (its batch's records before `acked` were
   * acknowledged, and earlier batches are acknowledged whole), three stores with no pass over the id.
   * Others (retries, hand-overs, concurrency > 1) by a hash of the id.
   */
  private started(env: EventEnvelope, batch?: HeldBatch, index = 0): number {
    const t = this.handling;
    if (t === undefined) return -1;
    if (batch !== undefined && this.s.concurrency === 1) return t.startByPlace(batch.partition, index - batch.acked);
    return t.startById(env.id);
  }

  /** The handler in `slot` (from `started`) settled. */
  private ended(slot: number): void {
    if (slot >= 0) this.handling!.finish(slot);
  }

  /**
   * Whether another handler may start now: fewer than `concurrency` run, none of them runs alone, and the
   * next event to start is not one that must run alone while others run.
   */
  private mayStart(): boolean {
    if (this.inFlight === 0) return true;
    if (this.inFlight >= this.s.concurrency || this.solo !== undefined) return false;
    if (this.soloIds.size === 0) return true;
    const r = this.redo.peek();
    return r === undefined || !this.soloIds.has(r.env.id);
  }

  /** Events this consumer holds and has not finished: the rest of its batch, retries, handlers running. */
  holding(): number {
    return this.batch.length - this.batchIdx + this.redo.length + this.timers.size + this.inFlight;
  }

  /**
   * Drop-oldest worker: the `k` records just popped (held in the ring, the batch before them all finished)
   * are counted in the shared cell, then acknowledged, so every look sees them in one place or the other.
   */
  private countThenAck(k: number): void {
    Atomics.store(this.heldCell!, 0, this.holding() + k);
    this.core.ack(this.lane, this.batchPart, this.info[2]!, k);
  }

  private publishHeld(): void {
    if (this.heldCell !== undefined) Atomics.store(this.heldCell, 0, this.holding());
  }

  constructor(
    private readonly core: PartitionCore,
    private readonly lane: number,
    private readonly s: ConsumerSettings,
    private readonly handler: DeliveryHandler,
    private readonly onDead: (dl: DeadLetter) => void,
  ) {
    // Written twice so V8 never treats it as a constant (see EventBus's constructor in src/bus.ts).
    this.stopped = true;
    this.stopped = false;
    this.offs = new Uint32Array(s.batchSize + 1);
    this.read = jsonReader(s.reader);
  }

  /** Parses payloads (compiled in this thread from the settings' plan). */
  private readonly read: JsonReader;

  setPartitions(parts: readonly number[]): void {
    this.parts = Uint32Array.from(parts);
    this.nParts = parts.length;
    this.cursor = 0;
  }

  /** Hands events back to this consumer (e.g. left by a previous member), ahead of new ones. */
  give(items: readonly Pending[]): void {
    for (const it of items) {
      if (it.alone === true) this.soloIds.add(it.env.id);
      this.redo.push(it);
    }
    this.publishHeld();
    this.wake();
  }

  get busy(): number {
    return this.inFlight;
  }

  private next(waitUs: number, spinUs: number): EventEnvelope | undefined {
    const r = this.redo.shift();
    if (r !== undefined) {
      this.curAttempt = r.attempt;
      this.curPart = r.partition;
      this.curBatch = undefined;
      return r.env;
    }
    if (this.batchIdx >= this.batch.length) {
      if (this.nParts === 0 || this.core.closed) return undefined;
      // A worker under drop-oldest pops with `hold` too, and acknowledges at once, once its shared cell counts
      // what it popped (`countThenAck`): a pop that released the records itself would leave an instant in which
      // neither the ring nor the cell shows them, and bus.idle() could see the group finished.
      const hold = this.s.hold || this.heldCell !== undefined;
      let text = this.core.pop(this.lane, this.parts, this.nParts, this.cursor, this.s.batchSize, this.info, this.waitingCell ? 0 : waitUs, spinUs, this.offs, hold, this.holder);
      if (text === null && this.waitingCell !== undefined && waitUs > 0) {
        // Nothing there: say what is still held (the cell's decreases are otherwise published every 64
        // events: bus.idle() would wait for this pop to time out), and count in as waiting for the pop that
        // may sleep (a publish() then leaves at once).
        this.publishHeld();
        this.setWaiting(1);
        try {
          text = this.core.pop(this.lane, this.parts, this.nParts, this.cursor, this.s.batchSize, this.info, waitUs, spinUs, this.offs, hold, this.holder);
        } finally {
          this.setWaiting(-1);
        }
      }
      if (text === null) {
        this.publishHeld();
        return undefined;
      }
      this.cursor = (this.cursor + 1) % this.nParts;
      this.batch = [];
      this.batchIdx = 0;
      this.batchPart = this.info[1]!;
      if (!this.s.hold && hold) this.countThenAck(this.info[0]!);
      if (this.s.hold) {
        this.batchHeld = { partition: this.batchPart, first: this.info[2]!, count: this.info[0]!, acked: 0, next: 0, done: undefined, unacked: 0 };
        this.held.add(this.batchHeld);
      }
      decodeRecords(text, this.offs, this.info[0]!, this.s.type, this.s.source, this.s.lazy, this.read, this.batch);
      this.publishHeld();
    }
    this.curAttempt = 1;
    this.curPart = this.batchPart;
    this.curBatch = this.batchHeld;
    this.curIndex = this.batchIdx;
    return this.batch[this.batchIdx++];
  }

  /**
   * Adds `d` to the waiting count of each partition. `waitingMine` is written after the counts go up and
   * cleared before they go down: a thread terminated in between leaves a count too high, never too low.
   */
  private setWaiting(d: 1 | -1): void {
    const w = this.waitingCell!;
    const mine = this.waitingMine;
    if (d === -1 && mine !== undefined) Atomics.store(mine, 0, 0);
    const waits = w.length >> 1;
    for (let k = 0; k < this.nParts; k++) {
      if (d === 1) Atomics.add(w, waits + this.parts[k]!, 1); // a new wait, visible before the count says one waits
      Atomics.add(w, this.parts[k]!, d);
    }
    if (d === 1 && mine !== undefined) {
      for (let k = 0; k < this.nParts; k++) mine[k + 1] = this.parts[k]!;
      Atomics.store(mine, 0, this.nParts);
    }
  }

  /** First-attempt contexts, one per partition (they are read-only, so handlers can share them). */
  private readonly firstCtx: DeliveryContext[] = [];

  private ctx(attempt: number, partition: number): DeliveryContext {
    return Object.freeze({ attempt, group: this.s.group, consumer: this.s.consumer, partition });
  }

  private deliver(env: EventEnvelope, attempt: number, partition: number, batch: HeldBatch | undefined, index: number): void {
    const ctx = attempt === 1 ? (this.firstCtx[partition] ??= this.ctx(1, partition)) : this.ctx(attempt, partition);
    this.inFlight++;
    const slot = this.started(env);
    let r: void | Promise<void>;
    try {
      r = this.handler(env, ctx);
    } catch (err) {
      this.inFlight--;
      this.ended(slot);
      this.failed(env, attempt, partition, err, batch, index);
      return;
    }
    if (r !== undefined && r !== null && typeof (r as Promise<void>).then === 'function') {
      const a: Active = { env, attempt, partition, settled: false, batch, index, slot };
      this.active.add(a);
      if (this.soloIds.size > 0 && this.soloIds.has(env.id)) this.solo = a;
      (r as Promise<void>).then(
        () => this.settle(a, undefined, false),
        (err: unknown) => this.settle(a, err, true),
      );
    } else {
      this.inFlight--;
      this.ended(slot);
      this.finished(env, batch, index);
    }
  }

  /** An event is done with (handled, or dead-lettered): its record is released. */
  private finished(env: EventEnvelope, batch: HeldBatch | undefined, index: number): void {
    if (this.soloIds.size > 0) this.soloIds.delete(env.id);
    if (batch !== undefined) this.release(batch, index);
    else this.onUnpark?.(env.id);
  }

  /** Event `index` of a held batch is finished: acknowledges what is finished every ACK_EVERY events, and at the end. */
  private release(b: HeldBatch, index: number): void {
    b.unacked++;
    if (b.done === undefined && index === b.next) {
      b.next++;
    } else {
      let d = b.done;
      if (d === undefined) {
        // The first event to finish out of order: from here on, each event's state.
        d = b.done = new Uint8Array(b.count);
        d.fill(2, 0, b.acked);
        d.fill(1, b.acked, b.next);
      }
      d[index] = 1;
      while (b.next < b.count && d[b.next] !== 0) b.next++;
    }
    if (b.next === b.count || b.unacked >= ACK_EVERY) this.ackFinished(b);
  }

  /** Acknowledges a held batch's finished events: the prefix, or (out of order) each run of them. */
  private ackFinished(b: HeldBatch): void {
    const d = b.done;
    if (d === undefined) {
      this.core.ack(this.lane, b.partition, (b.first + b.acked) >>> 0, b.next - b.acked);
      b.acked = b.next;
    } else {
      for (let i = b.acked; i < b.count;) {
        if (d[i] !== 1) {
          i++;
          continue;
        }
        const from = i;
        while (i < b.count && d[i] === 1) d[i++] = 2;
        this.core.ack(this.lane, b.partition, (b.first + from) >>> 0, i - from);
      }
      while (b.acked < b.count && d[b.acked] === 2) b.acked++;
    }
    b.unacked = 0;
    if (b.acked === b.count) this.held.delete(b);
  }

  private settle(a: Active, err: unknown, failed: boolean): void {
    if (a.settled) return; // handed back after the drain timeout
    a.settled = true;
    this.active.delete(a);
    this.inFlight--;
    this.ended(a.slot);
    if (this.solo === a) this.solo = undefined;
    if (failed) this.failed(a.env, a.attempt, a.partition, err, a.batch, a.index);
    else this.finished(a.env, a.batch, a.index);
    if (this.inFlight === 0 && this.idleWaiter) this.idleWaiter();
    this.wake();
  }

  private failed(env: EventEnvelope, attempt: number, partition: number, err: unknown, batch: HeldBatch | undefined, index: number): void {
    const verdict = afterFailure(this.s, attempt, err);
    if (!verdict.retry) {
      this.onDead(deadLetterOf(env, this.s.group, partition, attempt, verdict.error));
      this.finished(env, batch, index);
      return;
    }
    const item: Pending = { env, attempt: verdict.attempt, partition };
    if (this.soloIds.size > 0 && this.soloIds.has(env.id)) item.alone = true;
    // Its record leaves the ring; the main thread keeps a copy until the retries end.
    this.onPark?.(item);
    if (batch !== undefined) this.release(batch, index);
    const timer = setTimeout(() => {
      this.timers.delete(timer);
      this.redo.push(item);
      this.wake();
    }, verdict.delayMs);
    this.timers.set(timer, item);
    this.publishHeld();
  }

  private wake(): void {
    if (this.slotWaiter) {
      const w = this.slotWaiter;
      this.slotWaiter = undefined;
      w();
    }
    if (this.mainThread && !this.wakeScheduled && !this.pumping) {
      this.wakeScheduled = true;
      queueMicrotask(() => {
        this.wakeScheduled = false;
        this.pump();
      });
    }
  }

  /**
   * Main thread: delivers what is in the rings now, without waiting. A long backlog is delivered in slices
   * of at most DELIVERY_SLICE_MS per event-loop turn (DeliverySlice), the rest after a turn, so I/O, timers and other members keep going.
   */
  pump(): void {
    if (this.pumping || this.stopped) return;
    if (!this.slice.begin()) {
      this.resumeLater();
      return;
    }
    this.pumping = true;
    try {
      while (this.mayStart() && !this.stopped) {
        const env = this.next(0, 0);
        if (env === undefined) break;
        this.deliver(env, this.curAttempt, this.curPart, this.curBatch, this.curIndex);
        if (this.slice.over()) {
          this.resumeLater();
          break;
        }
      }
    } finally {
      this.pumping = false;
    }
  }

  /** This turn's delivery slice (pumps run by async handlers settling count against it too). */
  private readonly slice = new DeliverySlice();

  /** Main thread: pumps after an event-loop turn (a new member's first pump, a long backlog's next slice). */
  resumeLater(): void {
    this.nextTurn.request();
  }

  private readonly nextTurn = new NextTurn(() => this.pump());

  /** Worker thread: consumes until `shouldStop()`; each wait in the core is bounded by `waitUs`. */
  async run(shouldStop: () => boolean, waitUs: number, spinUs: number): Promise<void> {
    let lastYield = performance.now();
    let n = 0;
    while (!this.stopped) {
      // The stop flag is read before each pop and every 64 events, not per event.
      if ((n & 63) === 0) this.publishHeld();
      if (((n++ & 63) === 0 || this.batchIdx >= this.batch.length) && shouldStop()) break;
      let env: EventEnvelope | undefined;
      if (this.mayStart()) {
        const wait = this.inFlight > 0 ? 0 : this.timers.size > 0 ? Math.min(waitUs, 1000) : waitUs;
        env = this.next(wait, spinUs);
      }
      if (env !== undefined) {
        if (this.s.concurrency === 1) {
          // One at a time: await the handler's promise directly (no bookkeeping objects per event).
          const attempt = this.curAttempt;
          const partition = this.curPart;
          const batch = this.curBatch;
          const index = this.curIndex;
          let r: void | Promise<void>;
          let ok = false;
          this.inFlight++; // counted as held while it runs (holding())
          const slot = this.started(env, batch, index);
          try {
            r = this.handler(env, attempt === 1 ? (this.firstCtx[partition] ??= this.ctx(1, partition)) : this.ctx(attempt, partition));
            if (r !== undefined && r !== null && typeof (r as Promise<void>).then === 'function') await r;
            ok = true;
          } catch (err) {
            this.failed(env, attempt, partition, err, batch, index);
          } finally {
            this.inFlight--;
            this.ended(slot);
          }
          if (ok) this.finished(env, batch, index);
          if ((n & 63) === 0 && performance.now() - lastYield > 5) {
            await yieldMacrotask();
            lastYield = performance.now();
          }
          continue;
        }
        this.deliver(env, this.curAttempt, this.curPart, this.curBatch, this.curIndex);
        if (!this.mayStart()) await this.slot();
        else if ((n & 63) === 0 && performance.now() - lastYield > 5) {
          await yieldMacrotask(); // timers and messages get their turn under sustained load
          lastYield = performance.now();
        }
        continue;
      }
      if (this.inFlight > 0) await Promise.race([this.slot(), new Promise((r) => setTimeout(r, 1))]);
      else if (this.nParts === 0)
        await new Promise((r) => setTimeout(r, 5)); // nothing assigned yet
      else await yieldMacrotask();
      lastYield = performance.now();
    }
  }

  /** `item`, marked to run alone if it was given so (its next consumer keeps it alone). */
  private keepAlone(item: Pending): Pending {
    return this.soloIds.has(item.env.id) && item.alone !== true ? { ...item, alone: true } : item;
  }

  private slot(): Promise<void> {
    return new Promise((resolve) => (this.slotWaiter = resolve));
  }

  /**
   * Stops taking events, waits up to `drainMs` for in-flight handlers, and returns what was not delivered:
   * popped-but-undelivered events, pending retries and handlers that outlived the drain (for another member).
   */
  async stop(drainMs: number): Promise<Pending[]> {
    this.stopped = true;
    if (this.inFlight > 0) {
      let timer: NodeJS.Timeout | undefined;
      await Promise.race([new Promise<void>((resolve) => (this.idleWaiter = resolve)), new Promise<void>((resolve) => (timer = setTimeout(resolve, drainMs)))]);
      clearTimeout(timer);
    }
    const left: Pending[] = [];
    for (const a of this.active) {
      a.settled = true;
      // That delivery counts: one that was the last allowed is dead-lettered, not run again by another member.
      if (isLastAttempt(this.s, a.attempt)) this.onDead(outlivedDrain(a.env, this.s.group, a.partition, a.attempt, drainMs));
      else left.push(this.keepAlone({ env: a.env, attempt: a.attempt + 1, partition: a.partition }));
    }
    this.active.clear();
    this.solo = undefined;
    for (let r = this.redo.shift(); r !== undefined; r = this.redo.shift()) left.push(this.keepAlone(r));
    for (; this.batchIdx < this.batch.length; this.batchIdx++) left.push({ env: this.batch[this.batchIdx]!, attempt: 1, partition: this.batchPart });
    for (const [t, item] of this.timers) {
      clearTimeout(t);
      left.push(this.keepAlone(item));
    }
    this.timers.clear();
    // What is handed back leaves the ring (the caller passes it on to another member).
    for (const b of this.held) {
      // Every event not acknowledged yet, finished or not (a handler settling later acknowledges nothing more).
      if (b.done !== undefined) for (let i = b.acked; i < b.count; i++) b.done[i] ||= 1;
      b.next = b.count;
      this.ackFinished(b);
    }
    this.held.clear();
    return left;
  }
}
