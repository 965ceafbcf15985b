/**
 * A consumer in a worker thread: `run()` consumes until told to stop, waiting in the core with a bounded
 * spin-then-sleep so `close()` and `worker.terminate()` never hang. It pops with `hold` and keeps the main
 * thread able to take over if the thread dies, through what it is given at construction (WorkerLinks): the
 * shared cell of how many events it holds, the shared table of the handlers it runs, its holder mark on the
 * records, the topic's shared counts of waiting threads, and the park/unpark reports of events that are not
 * held in the ring.
 */
import type { EventEnvelope } from '../../src/envelope.js';
import type { DeadLetter, DeliveryHandler } from '../../src/transport.js';
import type { PartitionCore } from '../../native/js/core-api.js';
import type { InFlightTable } from './in-flight.js';
import type { HeldBatch } from './held-batches.js';
import { PartitionConsumer, type ConsumerSettings, type Pending } from './consumer.js';

/** What a worker thread's consumer shares with the main thread. */
export interface WorkerLinks {
  /**
   * Where the thread publishes how many events it holds (popped or handed over and not finished). Increases
   * are published at once (pop, retry, hand-over), decreases every 64 events, so the cell is an upper bound;
   * read by bus.idle() (the group's `unfinished`) and, under drop-oldest, by the main thread if the thread
   * dies (what it lost; otherwise what it held is taken back).
   */
  readonly heldCell: Int32Array;
  /**
   * The events whose handlers run, in shared memory, so if the thread dies the main thread knows which
   * events it had started (see `started` and in-flight.ts).
   */
  readonly handling: InFlightTable;
  /**
   * The mark the core puts on the records this thread holds (> 0, unique in its group), so that if it dies
   * the main thread takes back its records alone, not those another thread holds in the same ring (a
   * partition that moved in a rebalance while the thread still held some of its records).
   */
  readonly holder: number;
  /**
   * The topic's per-partition count of consumer threads blocked waiting for events, then its count of waits.
   * The thread counts itself in (and a new wait) before a pop that may sleep and out after it, so the bus
   * sends a publish() at once, once per wait (`Transport.sendNowProbe`, wait-probe.ts).
   */
  readonly waitingCell: Int32Array;
  /** What the thread added to `waitingCell` ([n, parts...]), so the main thread can take it off if the thread is terminated inside the pop. */
  readonly waitingMine: Int32Array;
  /** An event that is not (or no longer) held in the ring, because it waits for a retry: the main thread keeps a copy for as long as it is not finished... */
  readonly onPark: (item: Pending) => void;
  /** ...and an event finished that was parked (or handed over by the main thread). */
  readonly onUnpark: (id: string) => void;
}

const yieldMacrotask = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

export class WorkerConsumer extends PartitionConsumer {
  private readonly heldCell: Int32Array;
  private readonly handling: InFlightTable;
  private readonly holder: number;
  private readonly waitingCell: Int32Array;
  private readonly waitingMine: Int32Array;
  private readonly onPark: (item: Pending) => void;
  private readonly onUnpark: (id: string) => void;
  private slotWaiter: (() => void) | undefined;
  /** When the run loop last let the event loop turn. */
  private lastYield = 0;

  constructor(core: PartitionCore, lane: number, s: ConsumerSettings, handler: DeliveryHandler, onDead: (dl: DeadLetter) => void, links: WorkerLinks) {
    super(core, lane, s, handler, onDead);
    this.heldCell = links.heldCell;
    this.handling = links.handling;
    this.holder = links.holder;
    this.waitingCell = links.waitingCell;
    this.waitingMine = links.waitingMine;
    this.onPark = links.onPark;
    this.onUnpark = links.onUnpark;
  }

  /**
   * The handler of `env` starts: it is named in `handling` until it settles (`handling.finish` of the slot
   * returned). An event of a held batch with one handler at a time is named by where it is: the k-th record
   * the thread still holds in its partition (its batch's records before `acked` were acknowledged, and
   * earlier batches are acknowledged whole), three stores with no pass over the id. Others (retries,
   * hand-overs, concurrency > 1) by a hash of the id.
   */
  protected started(env: EventEnvelope, batch?: HeldBatch, index = 0): number {
    if (batch !== undefined && this.s.concurrency === 1) return this.handling.startByPlace(batch.partition, index - batch.acked);
    return this.handling.startById(env.id);
  }

  protected slotEnded(slot: number): void {
    this.handling.finish(slot);
  }

  protected publishHeld(): void {
    Atomics.store(this.heldCell, 0, this.holding());
  }

  protected parked(item: Pending): void {
    this.onPark(item);
  }

  protected unparked(id: string): void {
    this.onUnpark(id);
  }

  protected wake(): void {
    if (this.slotWaiter) {
      const w = this.slotWaiter;
      this.slotWaiter = undefined;
      w();
    }
  }

  /**
   * Pops with `hold` always, also under drop-oldest (`s.hold` off), where it acknowledges at once, once its
   * shared cell counts what it popped (`countThenAck`): a pop that released the records itself would leave
   * an instant in which neither the ring nor the cell shows them, and bus.idle() could see the group finished.
   */
  protected pop(waitUs: number, spinUs: number): string | null {
    let text = this.core.pop(this.lane, this.parts, this.nParts, this.cursor, this.s.batchSize, this.info, 0, spinUs, this.offs, true, this.holder);
    if (text === null && waitUs > 0) {
      // Nothing there: say what is still held (the cell's decreases are otherwise published every 64
      // events: bus.idle() would wait for this pop to time out), and count in as waiting for the pop that
      // may sleep (a publish() then leaves at once).
      this.publishHeld();
      this.setWaiting(1);
      try {
        text = this.core.pop(this.lane, this.parts, this.nParts, this.cursor, this.s.batchSize, this.info, waitUs, spinUs, this.offs, true, this.holder);
      } finally {
        this.setWaiting(-1);
      }
    }
    if (text !== null && !this.s.hold) this.countThenAck(this.info[0]!);
    return text;
  }

  /**
   * Drop-oldest: the `k` records just popped (held in the ring, the batch before them all finished) are
   * counted in the shared cell, then acknowledged, so every look sees them in one place or the other.
   */
  private countThenAck(k: number): void {
    Atomics.store(this.heldCell, 0, this.holding() + k);
    this.core.ack(this.lane, this.info[1]!, this.info[2]!, k);
  }

  /**
   * Adds `d` to the waiting count of each partition. `waitingMine` is written after the counts go up and
   * cleared before they go down: a thread terminated in between leaves a count too high, never too low.
   */
  private setWaiting(d: 1 | -1): void {
    const w = this.waitingCell;
    const mine = this.waitingMine;
    if (d === -1) Atomics.store(mine, 0, 0);
    const waits = w.length >> 1;
    for (let k = 0; k < this.nParts; k++) {
      if (d === 1) Atomics.add(w, waits + this.parts[k]!, 1); // a new wait, visible before the count says one waits
      Atomics.add(w, this.parts[k]!, d);
    }
    if (d === 1) {
      for (let k = 0; k < this.nParts; k++) mine[k + 1] = this.parts[k]!;
      Atomics.store(mine, 0, this.nParts);
    }
  }

  /** The next event popped without waiting, for the engine's `pump` (the run loop below starts events itself). */
  protected startNext(): boolean {
    const env = this.next(0, 0);
    if (env === undefined) return false;
    this.deliver(env, this.curAttempt, this.curPart, this.curBatch, this.curIndex);
    return true;
  }

  /** Consumes until `shouldStop()`; each wait in the core is bounded by `waitUs`. */
  run(shouldStop: () => boolean, waitUs: number, spinUs: number): Promise<void> {
    this.lastYield = performance.now();
    return this.s.concurrency === 1 ? this.runSerial(shouldStop, waitUs, spinUs) : this.runConcurrent(shouldStop, waitUs, spinUs);
  }

  /** One handler at a time: awaits the handler's promise directly (no bookkeeping objects per event). */
  private async runSerial(shouldStop: () => boolean, waitUs: number, spinUs: number): Promise<void> {
    let n = 0;
    while (!this.stopping) {
      if (this.stopDue(n++, shouldStop)) break;
      const env = this.next(this.waitFor(waitUs), spinUs);
      if (env === undefined) {
        await this.idle();
        continue;
      }
      const attempt = this.curAttempt;
      const partition = this.curPart;
      const batch = this.curBatch;
      const index = this.curIndex;
      const ctx = this.context(attempt, partition);
      let r: void | Promise<void>;
      let ok = false;
      this.ownRunStarted(); // counted as held while it runs (holding())
      const slot = this.started(env, batch, index);
      try {
        r = this.handler(env, ctx);
        if (r !== undefined && r !== null && typeof (r as Promise<void>).then === 'function') await r;
        ok = true;
      } catch (err) {
        this.verdict(batch, index, env, ctx, err);
      } finally {
        this.slotEnded(slot);
        this.ownRunEnded();
      }
      if (ok) this.finished(env, batch, index);
      if ((n & 63) === 0 && performance.now() - this.lastYield > 5) await this.yieldTurn();
    }
  }

  /** Up to `concurrency` handlers at once: waits for a free slot when all are taken. */
  private async runConcurrent(shouldStop: () => boolean, waitUs: number, spinUs: number): Promise<void> {
    let n = 0;
    while (!this.stopping) {
      if (this.stopDue(n++, shouldStop)) break;
      const env = this.canStart ? this.next(this.waitFor(waitUs), spinUs) : undefined;
      if (env === undefined) {
        await this.idle();
        continue;
      }
      this.deliver(env, this.curAttempt, this.curPart, this.curBatch, this.curIndex);
      if (!this.canStart) await this.slot();
      else if ((n & 63) === 0 && performance.now() - this.lastYield > 5) await this.yieldTurn(); // timers and messages get their turn under sustained load
    }
  }

  /**
   * Whether to stop before the loop's `n`-th event. The stop flag is read before each pop and every 64
   * events, not per event; the held count is published every 64 events.
   */
  private stopDue(n: number, shouldStop: () => boolean): boolean {
    if ((n & 63) === 0) this.publishHeld();
    return ((n & 63) === 0 || this.batchIdx >= this.batch.length) && shouldStop();
  }

  /** How long the next pop may wait: not while handlers run, and not past a retry's timer. */
  private waitFor(waitUs: number): number {
    return this.running > 0 ? 0 : this.timers.size > 0 ? Math.min(waitUs, 1000) : waitUs;
  }

  /** Nothing to start: waits for a handler to settle (at most 1 ms), for partitions, or for a turn. */
  private async idle(): Promise<void> {
    if (this.running > 0) await Promise.race([this.slot(), new Promise((r) => setTimeout(r, 1))]);
    else if (this.nParts === 0)
      await new Promise((r) => setTimeout(r, 5)); // nothing assigned yet
    else await yieldMacrotask();
    this.lastYield = performance.now();
  }

  private async yieldTurn(): Promise<void> {
    await yieldMacrotask();
    this.lastYield = performance.now();
  }

  private slot(): Promise<void> {
    return new Promise((resolve) => (this.slotWaiter = resolve));
  }
}
