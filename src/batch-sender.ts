/**
 * The batcher's flush and settle logic: when batches leave and what happens when their writes return.
 *
 * - While a write slot is free, a batch leaves on the next microtask (or after `maxWaitMs` when it lingers for
 *   company), or at once when full; while every slot is busy, events accumulate and what accumulated leaves
 *   when a slot comes free (the adaptive step, `slotFree`).
 * - `flush` sends sealed batches, and the open one, while slots are free; a write that completes synchronously
 *   and asks for a flush from within makes the running loop go round again.
 * - Each unit settles once, with the first report of its fate: through the write's `WriteSettlement`
 *   (`BatchSettlement`, one per write), or else through the write's result (a result per unit, or one failure
 *   for all). Each settled event stops counting as pending (`PendingLedger`). While `eventlane:batch` has a
 *   subscriber as a write leaves, each of its units is told to it once, as it settles (`BatchMessage`).
 */
import type { Batch, Unit } from './batch-units.js';
import type { BatchSizer } from './batch-sizing.js';
import type { BatcherStats, WriteFn } from './batcher.js';
import { performance } from 'node:perf_hooks';
import { batchChannel, type BatchMessage } from './diagnostics.js';
import { EventlaneError, TransportError } from './errors.js';
import type { WriteResult, WriteSettlement } from './transport.js';
import type { WriteSlots } from './write-slots.js';

/**
 * Batches leave on a microtask through this promise, not `queueMicrotask`: Node's queueMicrotask makes an
 * AsyncResource and a bound function per call, and code that inlined it (the publish path: `enqueueMany`)
 * is thrown away by any full GC that finds none of those objects alive ("weak objects"), as after a bus
 * closes. A reaction on a settled promise runs in the same microtask queue, in the same order.
 */
const RESOLVED = Promise.resolve();

/** What the batcher counts of the events it holds, told as writes settle. */
export interface PendingLedger {
  /** `n` events were written or failed: they no longer count as pending. */
  release(n: number): void;
  /** Lets publishers waiting for room in, as far as there is room. */
  admitWaiters(): void;
  /** Resolves the `flushAll` calls waiting, once nothing is pending. */
  drainedIfIdle(): void;
}

export class BatchSender {
  private scheduled = false;
  private timer: NodeJS.Timeout | undefined;
  private flushing = false;
  private flushAgain = false;
  private readonly flushNow = (): void => this.flush();

  constructor(
    private readonly write: WriteFn,
    private readonly sizer: BatchSizer,
    private readonly slots: WriteSlots,
    private readonly ledger: PendingLedger,
    private readonly stats: BatcherStats,
    private readonly maxWaitMs: number,
  ) {}

  /** Every write slot is busy and sealed batches wait: producers of large bursts should yield. */
  get saturated(): boolean {
    return this.slots.full && this.sizer.ready.length > 0;
  }

  /** After an event or run joined the open batch: it leaves when full, else at the next microtask (or `maxWaitMs`). */
  queued(): void {
    if (this.sizer.full) {
      this.sizer.seal();
      this.flush();
    } else if (!this.scheduled) {
      this.schedule();
    }
  }

  private schedule(): void {
    if (this.slots.full) return; // a returning write will flush
    this.scheduled = true;
    if (this.maxWaitMs > 0) this.timer = setTimeout(this.flushNow, this.maxWaitMs);
    else void RESOLVED.then(this.flushNow);
  }

  /** Send what is ready (and the open batch) while write slots are free. */
  flush(): void {
    // Re-entered from a write that completed synchronously (its settle asked for a flush): the running
    // loop goes round again, and a scheduled flush of a lingering batch stays scheduled.
    if (this.flushing) {
      this.flushAgain = true;
      return;
    }
    if (this.scheduled) {
      this.scheduled = false;
      if (this.timer !== undefined) {
        clearTimeout(this.timer);
        this.timer = undefined;
      }
    }
    if (this.slots.full) return;
    const ready = this.sizer.ready;
    this.flushing = true;
    try {
      do {
        this.flushAgain = false;
        this.sizer.seal();
        while (!this.slots.full && ready.length > 0) this.dispatch(ready.shift()!);
      } while (this.flushAgain && !this.slots.full);
    } finally {
      this.flushing = false;
      this.flushAgain = false;
    }
  }

  private dispatch(batch: Batch): void {
    this.slots.take();
    this.stats.batches++;
    this.stats.units += batch.units.length;
    if (batchChannel.hasSubscribers) batch.sentAt = performance.now();
    let result: Promise<WriteResult> | WriteResult;
    try {
      result = this.write(batch.units, new BatchSettlement(this, batch));
    } catch (err) {
      result = Promise.reject(err);
    }
    if (result === undefined || typeof (result as Promise<WriteResult>).then !== 'function') {
      this.settle(batch, result as WriteResult, undefined); // completed synchronously: the slot is free again now
      return;
    }
    (result as Promise<WriteResult>).then(
      (res) => this.settle(batch, res, undefined),
      // `settle` reads an undefined failure as success: a write rejected without a reason still failed.
      (err: unknown) => this.settle(batch, undefined, err ?? new TransportError('Transport write failed without a reason.')),
    );
  }

  /**
   * The transport says a write waits on something slow (`WriteSettlement.stalled`): its slot goes to the next
   * batch, so writes that need not wait do not queue behind it. Its events stay pending (`maxPendingEvents`
   * still bounds them) until they settle.
   */
  stalled(batch: Batch): void {
    if (!this.slots.release(batch)) return;
    this.stats.slotsFreed++;
    this.slotFree();
  }

  /**
   * The transport reports the fate of unit `i` of a write (`WriteSettlement.written` / `failed`): its
   * publishes settle now, and its events stop counting as pending. Only the first report of a unit, while the
   * write is out, counts; the write's own outcome for the unit is then ignored.
   */
  settleUnit(batch: Batch, i: number, err: Error | undefined, written: number): void {
    const unit = batch.units[i];
    if (batch.settled || unit === undefined || batch.early?.[i] === 1) return;
    (batch.early ??= new Uint8Array(batch.units.length))[i] = 1;
    batch.earlyEvents += unit.count;
    this.ledger.release(unit.count);
    this.stats.events += unit.count;
    const failure = err === undefined ? undefined : asTransportError(err);
    const failed = unit.settle(failure, written);
    this.stats.failedEvents += failed;
    if (batch.sentAt >= 0) reportUnit(unit, failure, failed, performance.now() - batch.sentAt);
    this.ledger.admitWaiters();
    this.ledger.drainedIfIdle();
  }

  private settle(batch: Batch, res: WriteResult, failure: unknown): void {
    this.slots.release(batch);
    batch.settled = true;
    const events = batch.events - batch.earlyEvents;
    this.ledger.release(events);
    this.stats.failedEvents += settleUnits(batch, res, failure);
    this.stats.events += events;
    this.ledger.admitWaiters();
    this.slotFree();
    this.ledger.drainedIfIdle();
  }

  /**
   * A write slot came free (a write settled, or the transport said it stalled). Adaptive step: what
   * accumulated while the write was out leaves now (a lingering batch is scheduled: it was not while every
   * slot was busy); producers waiting for a slot go on.
   */
  private slotFree(): void {
    const open = this.sizer.open;
    if (this.sizer.ready.length > 0 || (open.events > 0 && this.maxWaitMs === 0)) this.flush();
    else if (open.events > 0 && !this.scheduled) this.schedule();
    if (this.slots.waited && !this.saturated) this.slots.wake();
  }
}

/** The `WriteSettlement` of one write: reports go to the sender, for this write's batch. */
class BatchSettlement implements WriteSettlement {
  constructor(
    private readonly sender: BatchSender,
    private readonly batch: Batch,
  ) {}

  written(unit: number): void {
    this.sender.settleUnit(this.batch, unit, undefined, 0);
  }

  failed(unit: number, err: Error, writtenEvents = 0): void {
    // A failure without a reason still failed.
    this.sender.settleUnit(this.batch, unit, err ?? new TransportError('Transport write failed without a reason.'), writtenEvents);
  }

  stalled(): void {
    this.sender.stalled(this.batch);
  }
}

/**
 * Settles the units of `batch`'s write with its result (`res`: a failure per unit, or none) or its `failure`
 * (for all), except those settled through the write's settlement (`early[i] === 1`). Returns how many of their
 * events failed.
 */
function settleUnits(batch: Batch, res: WriteResult, failure: unknown): number {
  const { units, early } = batch;
  const all = failure !== undefined ? asTransportError(failure) : undefined;
  const writeMs = batch.sentAt >= 0 ? performance.now() - batch.sentAt : -1;
  let failedEvents = 0;
  for (let i = 0; i < units.length; i++) {
    if (early !== undefined && early[i] === 1) continue; // settled already (`WriteSettlement`)
    const own = res ? res[i] : undefined;
    const err = all ?? (own ? asTransportError(own) : undefined);
    const failed = units[i]!.settle(err, 0);
    failedEvents += failed;
    if (writeMs >= 0) reportUnit(units[i]!, err, failed, writeMs);
  }
  return failedEvents;
}

/** A settled unit of a write that left while `eventlane:batch` had a subscriber, told to it while it still has one. */
function reportUnit(u: Unit, error: Error | undefined, failed: number, writeMs: number): void {
  if (batchChannel.hasSubscribers) batchChannel.publish({ type: u.type, partition: u.partition, events: u.count, written: u.count - failed, writeMs, error } satisfies BatchMessage);
}

function asTransportError(err: unknown): Error {
  if (err instanceof EventlaneError) return err;
  return new TransportError(`Transport write failed: ${err instanceof Error ? err.message : String(err)}`, { cause: err });
}
