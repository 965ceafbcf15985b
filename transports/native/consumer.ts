/**
 * Delivers the events of a set of partitions of one lane to a handler, on the delivery engine
 * (src/delivery-engine.ts: `concurrency` slots, the handler run, retry or dead letter, the drain). This base
 * class is what the engine is fed from and what its verdicts do here: batches popped from the core and
 * decoded, retries waiting on timers out of the ring, held batches acknowledged as their events finish,
 * events that must run alone, and `stop()`, which drains and hands back what is not finished. How a batch is
 * popped, how the consumer comes back when a handler settles, and what a thread reports to the main thread
 * belong to the mode: MainThreadConsumer (main-consumer.ts) pumps without blocking, and WorkerConsumer
 * (worker-consumer.ts) runs a loop in a worker thread that waits in the core.
 */
import { Deque } from '../../src/deque.js';
import type { EventEnvelope } from '../../src/envelope.js';
import type { BackoffOptions, DeadLetter, DeliveryContext, DeliveryHandler } from '../../src/transport.js';
import type { PartitionCore } from '../../native/js/core-api.js';
import { jsonReader, type JsonReader, type ReaderPlan } from '../../src/json-reader.js';
import { decodeRecords } from './record-decode.js';
import { HeldBatches, type HeldBatch } from './held-batches.js';
import { DeliveryEngine, type RetryVerdict } from '../../src/delivery-engine.js';
import type { DeliveryObserver } from '../../src/failure-log.js';

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
  /** The bus's observer of failures (main thread only: settings cross to worker threads without it). */
  readonly observer?: DeliveryObserver | undefined;
  /** The transport's type, for the `eventlane:process` channel (`SubscriptionSpec.transport`). */
  readonly transport?: string | undefined;
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

export abstract class PartitionConsumer extends DeliveryEngine<HeldBatch | undefined> {
  protected parts = new Uint32Array(0);
  protected nParts = 0;
  protected cursor = 0;
  /** What the last pop returned: [records, partition, first record's position]. */
  protected readonly info = new Uint32Array(3);
  protected readonly offs: Uint32Array;
  protected batch: EventEnvelope[] = [];
  protected batchIdx = 0;
  private batchPart = 0;
  /** The held records of `batch` (hold mode). */
  private batchHeld: HeldBatch | undefined;
  /** Every batch popped with `hold` and not yet acknowledged. */
  private readonly held: HeldBatches;
  /** Held records of the event last returned by `next()` (undefined for a retry or a handed-over event), and its index there. */
  protected curBatch: HeldBatch | undefined;
  protected curIndex = 0;
  /** Events handed back or due for retry; delivered before new ones. */
  private readonly redo = new Deque<Pending>();
  protected readonly timers = new Map<NodeJS.Timeout, Pending>();
  protected curAttempt = 1;
  protected curPart = 0;
  /** Ids of the events given to run alone (Pending.alone) and not finished yet. */
  private readonly soloIds = new Set<string>();
  /** An event runs alone now (Pending.alone): nothing else starts until it ends. */
  private soloRunning = false;
  /** Handed back by `stop`: handlers that outlived the drain. */
  private left: Pending[] = [];

  /** Pops the next batch into `info` and `offs` from the partitions at `cursor`; null when there is none. */
  protected abstract pop(waitUs: number, spinUs: number): string | null;
  /**
   * The handler of `env` (event `index` of held batch `batch`, if it is one) starts; returns the slot that
   * `slotEnded` is given once it settles (-1 when nothing records running handlers).
   */
  protected abstract started(env: EventEnvelope, batch?: HeldBatch, index?: number): number;
  /** The handler in `slot` (from `started`) ended. */
  protected abstract slotEnded(slot: number): void;
  /** What this consumer holds changed (`holding()`). */
  protected abstract publishHeld(): void;
  /** `item` waits for a retry: its record is no longer held in the ring. */
  protected abstract parked(item: Pending): void;
  /** An event finished that was parked or handed over (not held in the ring). */
  protected abstract unparked(id: string): void;
  /** A handler settled, a retry is due or events were handed over: delivery may go on. */
  protected abstract wake(): void;

  /**
   * Beyond a free slot (DeliveryEngine.canStart), whether another handler may start now: none runs alone,
   * and the next event to start is not one that must run alone while others run.
   */
  protected override mayStart(): boolean {
    if (this.running === 0) return true;
    if (this.soloRunning) return false;
    if (this.soloIds.size === 0) return true;
    const r = this.redo.peek();
    return r === undefined || !this.soloIds.has(r.env.id);
  }

  /** Events this consumer holds and has not finished: the rest of its batch, retries, handlers running. */
  holding(): number {
    return this.batch.length - this.batchIdx + this.redo.length + this.timers.size + this.running;
  }

  constructor(
    protected readonly core: PartitionCore,
    protected readonly lane: number,
    protected readonly s: ConsumerSettings,
    handler: DeliveryHandler,
    private readonly onDead: (dl: DeadLetter) => void,
  ) {
    super(s, handler);
    this.offs = new Uint32Array(s.batchSize + 1);
    this.held = new HeldBatches(core, lane);
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
    return this.running;
  }

  /** The next event to deliver (its attempt, partition and held batch in `cur*`), or undefined when there is none. */
  protected next(waitUs: number, spinUs: number): EventEnvelope | undefined {
    const r = this.redo.shift();
    if (r !== undefined) {
      this.curAttempt = r.attempt;
      this.curPart = r.partition;
      this.curBatch = undefined;
      return r.env;
    }
    if (this.batchIdx >= this.batch.length && !this.refill(waitUs, spinUs)) return undefined;
    this.curAttempt = 1;
    this.curPart = this.batchPart;
    this.curBatch = this.batchHeld;
    this.curIndex = this.batchIdx;
    return this.batch[this.batchIdx++];
  }

  /** Pops and decodes the next batch (the current one is all taken); false when there is none. */
  private refill(waitUs: number, spinUs: number): boolean {
    if (this.nParts === 0 || this.core.closed) return false;
    const text = this.pop(waitUs, spinUs);
    if (text === null) {
      this.publishHeld();
      return false;
    }
    this.cursor = (this.cursor + 1) % this.nParts;
    this.batch = [];
    this.batchIdx = 0;
    this.batchPart = this.info[1]!;
    if (this.s.hold) this.batchHeld = this.held.add(this.batchPart, this.info[2]!, this.info[0]!);
    decodeRecords(text, this.offs, this.info[0]!, this.s.type, this.s.source, this.s.lazy, this.read, this.batch);
    this.publishHeld();
    return true;
  }

  /** First-attempt contexts, one per partition (they are read-only, so handlers can share them). */
  private readonly firstCtx: DeliveryContext[] = [];

  private ctx(attempt: number, partition: number): DeliveryContext {
    return Object.freeze({ attempt, group: this.s.group, consumer: this.s.consumer, partition });
  }

  /** The context of delivery `attempt` of an event of `partition`. */
  protected context(attempt: number, partition: number): DeliveryContext {
    return attempt === 1 ? (this.firstCtx[partition] ??= this.ctx(1, partition)) : this.ctx(attempt, partition);
  }

  /** Starts the handler of `env` in a slot (a promise it returns settles through the engine). */
  protected deliver(env: EventEnvelope, attempt: number, partition: number, batch: HeldBatch | undefined, index: number): void {
    if (this.soloIds.size > 0 && this.soloIds.has(env.id)) this.soloRunning = true;
    this.startHandler(batch, index, env, this.context(attempt, partition), this.started(env));
  }

  protected override ended(_batch: HeldBatch | undefined, slot: number): void {
    this.soloRunning = false; // one running alone is the only one running
    this.slotEnded(slot);
  }

  /** An event is done with (handled, or dead-lettered): its record is released. */
  protected finished(env: EventEnvelope, batch: HeldBatch | undefined, index: number): void {
    if (this.soloIds.size > 0) this.soloIds.delete(env.id);
    if (batch !== undefined) this.held.release(batch, index);
    else this.unparked(env.id);
  }

  protected succeeded(batch: HeldBatch | undefined, index: number, env: EventEnvelope): void {
    this.finished(env, batch, index);
  }

  protected dead(batch: HeldBatch | undefined, index: number, env: EventEnvelope, dl: DeadLetter): void {
    this.onDead(dl);
    this.finished(env, batch, index);
  }

  /** The event waits for its retry, out of the ring (the main thread keeps a copy until the retries end). */
  protected retry(batch: HeldBatch | undefined, index: number, env: EventEnvelope, ctx: DeliveryContext, next: RetryVerdict): void {
    const item: Pending = { env, attempt: next.attempt, partition: ctx.partition };
    if (this.soloIds.size > 0 && this.soloIds.has(env.id)) item.alone = true;
    this.parked(item);
    if (batch !== undefined) this.held.release(batch, index);
    const timer = setTimeout(() => {
      this.timers.delete(timer);
      this.redo.push(item);
      this.wake();
    }, next.delayMs);
    this.timers.set(timer, item);
    this.publishHeld();
  }

  protected handBack(_batch: HeldBatch | undefined, _index: number, env: EventEnvelope, ctx: DeliveryContext): void {
    this.left.push(this.keepAlone({ env, attempt: ctx.attempt + 1, partition: ctx.partition }));
  }

  /** A handler settled: delivery may go on (the mode's `wake`). */
  protected override resume(): void {
    this.wake();
  }

  /** `item`, marked to run alone if it was given so (its next consumer keeps it alone). */
  private keepAlone(item: Pending): Pending {
    return this.soloIds.has(item.env.id) && item.alone !== true ? { ...item, alone: true } : item;
  }

  /**
   * Stops taking events, waits up to `drainMs` for in-flight handlers, and returns what was not delivered:
   * popped-but-undelivered events, pending retries and handlers that outlived the drain (for another member).
   */
  async stop(drainMs: number): Promise<Pending[]> {
    this.stopTaking();
    if (await this.drain(drainMs)) this.giveUpRunning(drainMs);
    const left = this.left;
    this.left = [];
    this.soloRunning = false;
    for (let r = this.redo.shift(); r !== undefined; r = this.redo.shift()) left.push(this.keepAlone(r));
    for (; this.batchIdx < this.batch.length; this.batchIdx++) left.push({ env: this.batch[this.batchIdx]!, attempt: 1, partition: this.batchPart });
    for (const [t, item] of this.timers) {
      clearTimeout(t);
      left.push(this.keepAlone(item));
    }
    this.timers.clear();
    // What is handed back leaves the ring (the caller passes it on to another member).
    this.held.ackAll();
    return left;
  }
}
