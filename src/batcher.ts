/**
 * Adaptive publish batcher shared by all transports.
 *
 * - While fewer than `maxInFlight` writes are running, a batch leaves on the next microtask: an event
 *   published alone goes out at once, events published in the same tick leave together.
 * - While every write slot is busy, events accumulate and leave together when a write returns.
 * - `maxEvents` / `maxBytes` bound a batch and each unit in it; `maxWaitMs > 0` makes a non-full batch
 *   linger that long for company (a fixed flush interval) instead of leaving at once.
 * - `maxPendingEvents` bounds what the client buffers: past it `add` waits for room, or rejects.
 * - An event it refuses (closed, or no room with onFull 'reject') is told to `eventlane:publish-error`.
 * - A lane whose consumer thread starts to wait (in-process transports) gets `add`'s batch at once, once per wait.
 *
 * Per event the hot path is an array push and a few counter updates: one promise per unit (a
 * (type, partition) lane within a batch), one timer or microtask per batch.
 *
 * `Batcher` is the front: it takes events and runs, and owns what the client buffers (pending events, the
 * publishers waiting for room, `flushAll` and `close`). The parts: a batch's units and lanes
 * (src/batch-units.ts), the open batch's sizing (src/batch-sizing.ts), the write-slot accounting
 * (src/write-slots.ts) and the flush and settle logic (src/batch-sender.ts).
 */
import { BatchSizer } from './batch-sizing.js';
import { BatchSender, type PendingLedger } from './batch-sender.js';
import type { Lane, SplittableRun } from './batch-units.js';
import { Deque } from './deque.js';
import { BackpressureError, ClosedError } from './errors.js';
import { rejected } from './diagnostics.js';
import type { OutgoingEvent, PublishUnit, WriteResult, WriteSettlement } from './transport.js';
import { WriteSlots } from './write-slots.js';

export { Lane, type SplittableRun } from './batch-units.js';

export interface BatcherOptions {
  maxEvents: number;
  /** Most events per unit (at most maxEvents): see `UnitForm.maxEvents` (`TransportCapabilities.units`). */
  maxUnitEvents: number;
  maxBytes: number;
  /** Most bytes per unit (default and at most maxBytes): see `UnitForm.maxBytes`. */
  maxUnitBytes?: number;
  maxWaitMs: number;
  maxInFlight: number;
  maxPendingEvents: number;
  onFull: 'wait' | 'reject';
  /** `add` gives each event a promise of its own: see `UnitForm.partial`. */
  partialUnits?: boolean;
}

/**
 * A write; a result returned directly (not a promise) means it completed synchronously. `settle` reports units'
 * fates before the write settles, and a write that stopped counting against `maxInFlight` (see Transport.write).
 */
export type WriteFn = (units: readonly PublishUnit[], settle: WriteSettlement) => Promise<WriteResult> | WriteResult;

/** Counters since the batcher was created. */
export interface BatcherStats {
  events: number;
  batches: number;
  units: number;
  failedEvents: number;
  /** Writes whose slot came free before they settled: the transport said they stalled (`WriteSettlement.stalled`). */
  slotsFreed: number;
}

/** A single publisher waiting for room (`maxPendingEvents`). */
class Waiter {
  constructor(
    readonly lane: Lane,
    readonly event: OutgoingEvent,
    readonly size: number,
    readonly resolve: (p: Promise<void>) => void,
  ) {}
}

/** A bulk producer waiting until `n` more events fit. */
class RoomWaiter {
  constructor(
    readonly n: number,
    readonly resolve: () => void,
  ) {}
}

export class Batcher implements PendingLedger {
  private readonly sizer: BatchSizer;
  private readonly slots: WriteSlots;
  private readonly sender: BatchSender;
  private pending = 0;
  // Deques: a burst past maxPendingEvents can queue 100,000s here; Array#shift would make draining them quadratic.
  private readonly waiters = new Deque<Waiter>();
  /** Bulk producers (publishMany) waiting until a whole slice fits. */
  private readonly roomWaiters = new Deque<RoomWaiter>();
  private drained: (() => void)[] = [];
  private closed = false;
  readonly stats: BatcherStats = { events: 0, batches: 0, units: 0, failedEvents: 0, slotsFreed: 0 };
  /** Single publishes (`add`) get a promise of their own per event: `UnitForm.partial`. */
  private readonly ownPromises: boolean;

  constructor(
    write: WriteFn,
    private readonly opts: BatcherOptions,
  ) {
    this.sizer = new BatchSizer(opts);
    this.slots = new WriteSlots(opts.maxInFlight);
    this.sender = new BatchSender(write, this.sizer, this.slots, this, this.stats, opts.maxWaitMs);
    this.ownPromises = opts.partialUnits === true;
  }

  /** Every write slot is busy and sealed batches wait: producers of large bursts should yield. */
  get saturated(): boolean {
    return this.sender.saturated;
  }

  /** Resolves once a sealed batch no longer waits for a write slot. */
  writable(): Promise<void> {
    if (!this.saturated) return Promise.resolve();
    return this.slots.waitWritable();
  }

  /** Events buffered or in flight. */
  get pendingEvents(): number {
    return this.pending;
  }

  /**
   * Whether `n` more events fit under maxPendingEvents now (always when nothing is buffered, so a call
   * larger than the bound still goes out, in slices), with no single publisher waiting before them.
   */
  fits(n: number): boolean {
    return this.waiters.length === 0 && this.roomWaiters.length === 0 && (this.pending === 0 || this.pending + n <= this.opts.maxPendingEvents);
  }

  /**
   * For bulk producers: resolves once `n` more events fit (see `fits`), in FIFO order with other bulk
   * producers; `undefined` when they fit now. Then `addFitted` queues them without per-event waiting.
   */
  room(n: number): Promise<void> | undefined {
    if (this.fits(n)) return undefined;
    return new Promise<void>((resolve) => this.roomWaiters.push(new RoomWaiter(n, resolve)));
  }

  /**
   * Queue one event of a slice `room` made space for (no per-event backpressure check). The promise settles
   * with the fate of the unit that carries it, where it is event `placedAt` (read it at once): a unit written
   * in part (`WriteSettlement.failed`) wrote its first events in unit order, whoever published them, so the
   * place is what says whether the event was written.
   */
  addFitted(lane: Lane, event: OutgoingEvent, size: number): Promise<void> {
    if (this.closed) {
      this.placedAt = 0;
      return rejected(lane.type, 1, new ClosedError('publisher'));
    }
    const unit = this.sizer.place(lane, event, size);
    this.pending++;
    this.placedAt = unit.count - 1;
    this.sender.queued();
    return unit.promise;
  }

  /** Where in its unit the event the last `addFitted` queued is (how many of the unit's events come before it). */
  placedAt = 0;

  /**
   * Queues a run of a slice `room` made space for (`sizes[at + i]` is event i's size) as one unit, or as
   * several where it crosses the bound of a batch or unit (`maxEvents`, `maxUnitEvents`, `maxBytes`, as
   * `push` splits single events). Calls `track(from, to, promise, 0)` for each unit, with the run's events it
   * carries (from the unit's first event on: a run has a unit of its own) and the promise that settles with its
   * fate.
   */
  addRun(lane: Lane, run: SplittableRun, sizes: Float64Array, at: number, track: (from: number, to: number, p: Promise<void>, first: number) => void): void {
    if (this.closed) return track(0, run.count, rejected(lane.type, run.count, new ClosedError('publisher')), 0);
    const n = run.count;
    for (let from = 0; from < n;) {
      const unit = this.sizer.placeRun(lane, run, sizes, at, from);
      const to = from + unit.count;
      this.pending += unit.count;
      track(from, to, unit.promise, 0);
      from = to;
      this.sender.queued();
    }
  }

  /**
   * Queue one event; the promise settles with the fate of the unit that carries it. When the transport's
   * probe says a consumer started to wait for the lane's events, the batch goes at once (see
   * `Transport.sendNowProbe`): batches then hold what piled up while the consumer woke and worked. Bulk
   * calls (`addFitted`) keep full batches.
   */
  add(lane: Lane, event: OutgoingEvent, size: number): Promise<void> {
    if (this.closed) return rejected(lane.type, 1, new ClosedError('publisher'));
    if (this.pending >= this.opts.maxPendingEvents || this.waiters.length > 0) return this.overflow(lane, event, size);
    const p = this.push(lane, event, size, this.ownPromises);
    const sendNow = lane.sendNow;
    if (sendNow !== undefined && this.sizer.open.events > 0 && this.opts.maxWaitMs === 0 && sendNow(lane.partition)) this.sender.flush();
    return p;
  }

  /** `own`: the event gets a promise of its own (`UnitForm.partial`), made before the batch may leave. */
  private push(lane: Lane, event: OutgoingEvent, size: number, own = false): Promise<void> {
    const unit = this.sizer.place(lane, event, size);
    this.pending++;
    const p = own ? unit.ownPromise(unit.count - 1) : unit.promise;
    this.sender.queued();
    return p;
  }

  private overflow(lane: Lane, event: OutgoingEvent, size: number): Promise<void> {
    if (this.opts.onFull === 'reject') {
      return rejected(lane.type, 1, new BackpressureError(this.pending, this.opts.maxPendingEvents));
    }
    return new Promise<Promise<void>>((resolve) => {
      this.waiters.push(new Waiter(lane, event, size, resolve));
    }).then((p) => p);
  }

  /** `n` events were written or failed (`PendingLedger`). */
  release(n: number): void {
    this.pending -= n;
  }

  /** Resolves the `flushAll` calls waiting once nothing is pending (`PendingLedger`). */
  drainedIfIdle(): void {
    if (this.pending === 0 && this.drained.length > 0) {
      const done = this.drained;
      this.drained = [];
      for (const d of done) d();
    }
  }

  /** Lets waiting publishers in as far as there is room: single ones first, then bulk ones (`PendingLedger`). */
  admitWaiters(): void {
    while (this.waiters.length > 0 && this.pending < this.opts.maxPendingEvents) {
      const w = this.waiters.shift()!;
      w.resolve(this.closed ? rejected(w.lane.type, 1, new ClosedError('publisher')) : this.push(w.lane, w.event, w.size, this.ownPromises));
    }
    if (this.waiters.length > 0) return; // single publishers first: they waited longer
    // Bulk producers, in order, as long as their slices fit in what is free now.
    let free = this.opts.maxPendingEvents - this.pending;
    while (this.roomWaiters.length > 0) {
      const r = this.roomWaiters.peek()!;
      if (this.pending > 0 && r.n > free) break;
      this.roomWaiters.shift();
      free -= r.n;
      r.resolve();
      if (this.pending === 0) break; // an oversized slice goes alone
    }
  }

  /**
   * Hands what is buffered to the transport now, as far as write slots allow. True when nothing is left
   * buffered (writes may still be in flight).
   */
  flushSync(): boolean {
    if (this.sizer.open.events > 0) this.sizer.seal();
    this.sender.flush();
    return this.sizer.open.events === 0 && this.sizer.ready.length === 0;
  }

  /** Counts an event a caller wrote to the transport itself (`tryPublish`) as one batch of one unit. */
  countWritten(): void {
    this.stats.events++;
    this.stats.batches++;
    this.stats.units++;
  }

  /** Send everything buffered now and resolve when nothing is pending. */
  flushAll(): Promise<void> {
    if (this.sizer.open.events > 0) {
      this.sizer.seal();
    }
    this.sender.flush();
    if (this.pending === 0 && this.waiters.length === 0) return Promise.resolve();
    return new Promise<void>((resolve) => this.drained.push(resolve));
  }

  /** Refuse new events, send what is buffered (waiting publishers included) and wait for it. */
  async close(): Promise<void> {
    // Waiting publishers were accepted before close: they go out too.
    while (this.waiters.length > 0 || this.pending > 0) await this.flushAll();
    this.closed = true;
    // Bulk producers still waiting for room find the batcher closed when they add.
    while (this.roomWaiters.length > 0) this.roomWaiters.shift()!.resolve();
  }
}
