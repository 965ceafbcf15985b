/**
 * Delivers the events of a set of partitions of one lane to a handler: batches popped from the core,
 * `concurrency` handlers at once, retry with backoff, dead-lettering after `maxDeliveries`. The same class
 * runs on the main thread (`pump()`, never blocking) and in a worker thread (`run()`, waiting in the core
 * with a bounded spin-then-sleep so `close()` and `worker.terminate()` never hang).
 */
import { backoffDelay } from '../../src/backoff.js';
import { Deque } from '../../src/deque.js';
import { DELIVERY_SLICE_MS, NextTurn } from '../../src/next-turn.js';
import type { EventEnvelope } from '../../src/envelope.js';
import { describeError, isRetryable } from '../../src/errors.js';
import type { BackoffOptions, DeadLetter, DeliveryContext, DeliveryHandler } from '../../src/transport.js';
import type { PartitionCore } from '../../native/js/core-api.js';
import { decodeRecords } from './record.js';

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
}

/** An event waiting for (another) delivery. Structured-cloneable, so workers can hand it back. */
export interface Pending {
  env: EventEnvelope;
  attempt: number;
  partition: number;
}

interface Active extends Pending {
  settled: boolean;
}

const yieldMacrotask = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));


export class PartitionConsumer {
  private parts = new Uint32Array(0);
  private nParts = 0;
  private cursor = 0;
  private readonly info = new Uint32Array(2);
  private readonly offs: Uint32Array;
  private batch: EventEnvelope[] = [];
  private batchIdx = 0;
  private batchPart = 0;
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
   * events, so the cell is an upper bound; read by the main thread if the thread dies.
   */
  heldCell: Int32Array | undefined;

  /** Events this consumer holds and has not finished: the rest of its batch, retries, handlers running. */
  holding(): number {
    return this.batch.length - this.batchIdx + this.redo.length + this.timers.size + this.inFlight;
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
    this.offs = new Uint32Array(s.batchSize + 1);
  }

  setPartitions(parts: readonly number[]): void {
    this.parts = Uint32Array.from(parts);
    this.nParts = parts.length;
    this.cursor = 0;
  }

  /** Hands events back to this consumer (e.g. left by a previous member), ahead of new ones. */
  give(items: readonly Pending[]): void {
    for (const it of items) this.redo.push(it);
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
      return r.env;
    }
    if (this.batchIdx >= this.batch.length) {
      if (this.nParts === 0 || this.core.closed) return undefined;
      const text = this.core.pop(this.lane, this.parts, this.nParts, this.cursor, this.s.batchSize, this.info, waitUs, spinUs, this.offs);
      if (text === null) {
        this.publishHeld();
        return undefined;
      }
      this.cursor = (this.cursor + 1) % this.nParts;
      this.batch = [];
      this.batchIdx = 0;
      this.batchPart = this.info[1]!;
      decodeRecords(text, this.offs, this.info[0]!, this.s.type, this.s.source, this.s.lazy, this.batch);
      this.publishHeld();
    }
    this.curAttempt = 1;
    this.curPart = this.batchPart;
    return this.batch[this.batchIdx++];
  }

  /** First-attempt contexts, one per partition (they are read-only, so handlers can share them). */
  private readonly firstCtx: DeliveryContext[] = [];

  private ctx(attempt: number, partition: number): DeliveryContext {
    return Object.freeze({ attempt, group: this.s.group, consumer: this.s.consumer, partition });
  }

  private deliver(env: EventEnvelope, attempt: number, partition: number): void {
    const ctx = attempt === 1 ? (this.firstCtx[partition] ??= this.ctx(1, partition)) : this.ctx(attempt, partition);
    this.inFlight++;
    let r: void | Promise<void>;
    try {
      r = this.handler(env, ctx);
    } catch (err) {
      this.inFlight--;
      this.failed(env, attempt, partition, err);
      return;
    }
    if (r !== undefined && r !== null && typeof (r as Promise<void>).then === 'function') {
      const a: Active = { env, attempt, partition, settled: false };
      this.active.add(a);
      (r as Promise<void>).then(
        () => this.settle(a, undefined, false),
        (err: unknown) => this.settle(a, err, true),
      );
    } else {
      this.inFlight--;
    }
  }

  private settle(a: Active, err: unknown, failed: boolean): void {
    if (a.settled) return; // handed back after the drain timeout
    a.settled = true;
    this.active.delete(a);
    this.inFlight--;
    if (failed) this.failed(a.env, a.attempt, a.partition, err);
    if (this.inFlight === 0 && this.idleWaiter) this.idleWaiter();
    this.wake();
  }

  private failed(env: EventEnvelope, attempt: number, partition: number, err: unknown): void {
    if (attempt >= this.s.maxDeliveries || !isRetryable(err)) {
      this.onDead({
        id: env.id,
        type: env.type,
        group: this.s.group,
        partition,
        attempts: attempt,
        error: describeError(err),
        event: env,
        deadAt: Date.now(),
      });
      return;
    }
    const item: Pending = { env, attempt: attempt + 1, partition };
    const timer = setTimeout(() => {
      this.timers.delete(timer);
      this.redo.push(item);
      this.wake();
    }, backoffDelay(this.s.backoff, attempt));
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
   * of at most DELIVERY_SLICE_MS, the rest after an event-loop turn, so I/O, timers and other members keep going.
   */
  pump(): void {
    if (this.pumping || this.stopped) return;
    this.pumping = true;
    const until = performance.now() + DELIVERY_SLICE_MS;
    let n = 0;
    try {
      while (this.inFlight < this.s.concurrency && !this.stopped) {
        const env = this.next(0, 0);
        if (env === undefined) break;
        this.deliver(env, this.curAttempt, this.curPart);
        if ((++n & 127) === 0 && performance.now() > until) {
          this.resumeLater();
          break;
        }
      }
    } finally {
      this.pumping = false;
    }
  }

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
      if (this.inFlight < this.s.concurrency) {
        const wait = this.inFlight > 0 ? 0 : this.timers.size > 0 ? Math.min(waitUs, 1000) : waitUs;
        env = this.next(wait, spinUs);
      }
      if (env !== undefined) {
        if (this.s.concurrency === 1) {
          // One at a time: await the handler's promise directly (no bookkeeping objects per event).
          const attempt = this.curAttempt;
          const partition = this.curPart;
          let r: void | Promise<void>;
          this.inFlight++; // counted as held while it runs (holding())
          try {
            r = this.handler(env, attempt === 1 ? (this.firstCtx[partition] ??= this.ctx(1, partition)) : this.ctx(attempt, partition));
            if (r !== undefined && r !== null && typeof (r as Promise<void>).then === 'function') await r;
          } catch (err) {
            this.failed(env, attempt, partition, err);
          } finally {
            this.inFlight--;
          }
          if ((n & 63) === 0 && performance.now() - lastYield > 5) {
            await yieldMacrotask();
            lastYield = performance.now();
          }
          continue;
        }
        this.deliver(env, this.curAttempt, this.curPart);
        if (this.inFlight >= this.s.concurrency) await this.slot();
        else if ((n & 63) === 0 && performance.now() - lastYield > 5) {
          await yieldMacrotask(); // timers and messages get their turn under sustained load
          lastYield = performance.now();
        }
        continue;
      }
      if (this.inFlight > 0) await Promise.race([this.slot(), new Promise((r) => setTimeout(r, 1))]);
      else if (this.nParts === 0) await new Promise((r) => setTimeout(r, 5)); // nothing assigned yet
      else await yieldMacrotask();
      lastYield = performance.now();
    }
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
      await Promise.race([
        new Promise<void>((resolve) => (this.idleWaiter = resolve)),
        new Promise<void>((resolve) => (timer = setTimeout(resolve, drainMs))),
      ]);
      clearTimeout(timer);
    }
    const left: Pending[] = [];
    for (const a of this.active) {
      a.settled = true;
      left.push({ env: a.env, attempt: a.attempt + 1, partition: a.partition });
    }
    this.active.clear();
    for (let r = this.redo.shift(); r !== undefined; r = this.redo.shift()) left.push(r);
    for (; this.batchIdx < this.batch.length; this.batchIdx++) left.push({ env: this.batch[this.batchIdx]!, attempt: 1, partition: this.batchPart });
    for (const [t, item] of this.timers) {
      clearTimeout(t);
      left.push(item);
    }
    this.timers.clear();
    return left;
  }
}
