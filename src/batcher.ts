/**
 * Adaptive publish batcher shared by all transports.
 *
 * - While fewer than `maxInFlight` writes are running, a batch leaves on the next microtask: an event
 *   published alone goes out at once, events published in the same tick leave together.
 * - While every write slot is busy, events accumulate and leave together when a write returns.
 * - `maxEvents` / `maxBytes` bound a batch and each unit in it; `maxWaitMs > 0` makes a non-full batch
 *   linger that long for company (a fixed flush interval) instead of leaving at once.
 * - `maxPendingEvents` bounds what the client buffers: past it `add` waits for room, or rejects.
 * - A lane whose consumer thread starts to wait (in-process transports) gets `add`'s batch at once, once per wait.
 *
 * Per event the hot path is an array push and a few counter updates: one promise per unit (a
 * (type, partition) lane within a batch), one timer or microtask per batch.
 */
import { emptyArray } from './arrays.js';
import { Deque } from './deque.js';
import { BackpressureError, ClosedError, EventlaneError, TransportError } from './errors.js';
import { withWritten, writtenCount, type EventRun, type OutgoingEvent, type PublishUnit, type WriteResult } from './transport.js';

/** A run the batcher can split where it crosses a batch or unit bound (`Run` of outgoing.ts). */
export interface SplittableRun extends EventRun {
  slice(from: number, to: number): SplittableRun;
}

export interface BatcherOptions {
  maxEvents: number;
  /** Most events per unit (at most maxEvents): see `TransportCapabilities.maxUnitEvents`. */
  maxUnitEvents: number;
  maxBytes: number;
  /** Most bytes per unit (default and at most maxBytes): see `TransportCapabilities.maxUnitBytes`. */
  maxUnitBytes?: number;
  maxWaitMs: number;
  maxInFlight: number;
  maxPendingEvents: number;
  onFull: 'wait' | 'reject';
  /** `add` gives each event a promise of its own: see `TransportCapabilities.partialUnits`. */
  partialUnits?: boolean;
}

/**
 * A write; a result returned directly (not a promise) means it completed synchronously. `freeSlot` stops the
 * write counting against `maxInFlight` before it settles; `unitWritten(i)` settles unit i as written before the
 * write does (see Transport.write).
 */
export type WriteFn = (units: readonly PublishUnit[], freeSlot: () => void, unitWritten: (index: number) => void) => Promise<WriteResult> | WriteResult;

/** A (type, partition) write lane. The bus keeps one per partition of each event type. */
export class Lane {
  /** The unit this lane is filling in the open batch, valid while `gen` matches the batcher's. */
  unit: Unit | undefined = undefined;
  gen = -1;
  constructor(
    readonly type: string,
    readonly partition: number,
    /** Whether a consumer now waits for this lane's events (`Transport.sendNowProbe`). */
    readonly sendNow: ((partition: number) => boolean) | undefined = undefined,
  ) {}
}

const RELEASED: OutgoingEvent[] = Object.freeze([]) as unknown as OutgoingEvent[];

/**
 * Batches leave on a microtask through this promise, not `queueMicrotask`: Node's queueMicrotask makes an
 * AsyncResource and a bound function per call, and code that inlined it (the publish path: `enqueueMany`)
 * is thrown away by any full GC that finds none of those objects alive ("weak objects"), as after a bus
 * closes. A reaction on a settled promise runs in the same microtask queue, in the same order.
 */
const RESOLVED = Promise.resolve();

function noop(): void {}

/** Settles one event's own promise: with no error it resolves. */
type Settle = (err: Error | undefined) => void;

class Unit implements PublishUnit {
  events: OutgoingEvent[] = emptyArray();
  run: EventRun | undefined = undefined;
  /** Events carried (kept after `release`). */
  count = 0;
  bytes = 0;
  readonly promise: Promise<void>;
  resolve!: () => void;
  reject!: (err: Error) => void;
  constructor(
    readonly type: string,
    readonly partition: number,
  ) {
    this.promise = new Promise<void>((resolve, reject) => {
      this.resolve = resolve;
      this.reject = reject;
    });
  }

  /**
   * Per event, the settle of its own promise (`add` with `partialUnits`), or undefined for an event that
   * settles with `promise` only; undefined while no event has one.
   */
  own: (Settle | undefined)[] | undefined = undefined;

  /** A promise of its own for event `index` (the last added), settled by `settle`. */
  ownPromise(index: number): Promise<void> {
    let own = this.own;
    if (own === undefined) {
      own = this.own = [];
      void this.promise.catch(noop); // its events may all have promises of their own: none awaits it
    }
    while (own.length < index) own.push(undefined);
    return new Promise<void>((resolve, reject) => own.push((err) => (err === undefined ? resolve() : reject(err))));
  }

  /**
   * The unit's fate: written (`err` undefined), or failed after its first `writtenCount(err)` events were
   * written. Returns how many of its events failed.
   */
  settle(err: Error | undefined): number {
    const own = this.own;
    if (err === undefined) {
      this.resolve();
      if (own !== undefined) for (let i = 0; i < own.length; i++) own[i]?.(undefined);
      return 0;
    }
    const written = Math.min(writtenCount(err), this.count);
    this.reject(err);
    if (own !== undefined) for (let i = 0; i < own.length; i++) own[i]?.(i < written ? undefined : err);
    return this.count - written;
  }

  release(): void {
    this.events = RELEASED;
    this.run = undefined;
  }
}

class Batch {
  readonly units: Unit[] = emptyArray();
  events = 0;
  bytes = 0;
  /** Sent, and no longer counted in `inFlight` (the transport freed its slot, or it settled). */
  slotFreed = false;
  /** Units the transport reported written before the write settled (`unitWritten`), and their events. */
  early: Uint8Array | undefined = undefined;
  earlyEvents = 0;
  settled = false;
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

/** Counters since the batcher was created. */
export interface BatcherStats {
  events: number;
  batches: number;
  units: number;
  failedEvents: number;
  /** Writes whose slot the transport freed before they settled (a slow Cluster node: see Transport.write). */
  slotsFreed: number;
}

/**
 * A unit and a batch kept for the life of the process, so their maps survive full GCs while nothing
 * is in flight (see `MAP_ANCHORS` in outgoing.ts: the publish path is optimized against them).
 */
export const BATCH_ANCHORS: readonly object[] = [new Unit('', 0), new Batch()];

export class Batcher {
  private open = new Batch();
  private gen = 0;
  // Deques: a burst past maxPendingEvents (or of one-event batches) can queue 100,000s here; Array#shift
  // would make draining them quadratic.
  private readonly ready = new Deque<Batch>();
  private inFlight = 0;
  private pending = 0;
  private scheduled = false;
  private timer: NodeJS.Timeout | undefined;
  private readonly waiters = new Deque<Waiter>();
  /** Bulk producers (publishMany) waiting until a whole slice fits. */
  private readonly roomWaiters = new Deque<RoomWaiter>();
  private drained: (() => void)[] = [];
  private writableWaiters: (() => void)[] = [];
  private closed = false;
  readonly stats: BatcherStats = { events: 0, batches: 0, units: 0, failedEvents: 0, slotsFreed: 0 };
  private readonly flushNow = (): void => this.flush();
  /** Single publishes (`add`) get a promise of their own per event: `partialUnits`. */
  private readonly ownPromises: boolean;
  /** Most bytes per unit: `maxUnitBytes`, at most `maxBytes`. */
  private readonly unitBytes: number;

  constructor(
    private readonly write: WriteFn,
    private readonly opts: BatcherOptions,
  ) {
    this.ownPromises = opts.partialUnits === true;
    this.unitBytes = Math.min(opts.maxBytes, opts.maxUnitBytes ?? Infinity);
    // Written twice so V8 never treats it as a constant (see EventBus's constructor).
    this.closed = true;
    this.closed = false;
  }

  /** Every write slot is busy and sealed batches wait: producers of large bursts should yield. */
  get saturated(): boolean {
    return this.inFlight >= this.opts.maxInFlight && this.ready.length > 0;
  }

  /** Resolves once a sealed batch no longer waits for a write slot. */
  writable(): Promise<void> {
    if (!this.saturated) return Promise.resolve();
    return new Promise<void>((resolve) => this.writableWaiters.push(resolve));
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
   * in part (`withWritten`) wrote its first events in unit order, whoever published them, so the place is what
   * says whether the event was written.
   */
  addFitted(lane: Lane, event: OutgoingEvent, size: number): Promise<void> {
    if (this.closed) {
      this.placedAt = 0;
      return Promise.reject(new ClosedError('publisher'));
    }
    const unit = this.place(lane, event, size);
    this.placedAt = unit.count - 1;
    this.queued();
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
    if (this.closed) return track(0, run.count, Promise.reject(new ClosedError('publisher')), 0);
    const n = run.count;
    const { maxEvents, maxUnitEvents, maxBytes } = this.opts;
    const maxUnitBytes = this.unitBytes;
    for (let from = 0; from < n;) {
      const open = this.open;
      const most = Math.min(n, from + Math.min(maxUnitEvents, Math.max(1, maxEvents - open.events)));
      let to = from;
      let bytes = 0;
      while (to < most) {
        const size = sizes[at + to]!;
        if (bytes > 0 && bytes + size > maxUnitBytes) break; // the unit is full (push starts a new unit there)
        bytes += size;
        to++;
        if (open.bytes + bytes >= maxBytes) break; // the batch is full (push seals it there)
      }
      const unit = new Unit(lane.type, lane.partition);
      unit.run = from === 0 && to === n ? run : run.slice(from, to);
      unit.count = to - from;
      unit.bytes = bytes;
      open.units.push(unit);
      // Single events published after the run go into a unit after it.
      lane.unit = undefined;
      open.events += to - from;
      open.bytes += bytes;
      this.pending += to - from;
      track(from, to, unit.promise, 0);
      from = to;
      if (open.events >= maxEvents || open.bytes >= maxBytes) {
        this.seal();
        this.flush();
      } else if (!this.scheduled) {
        this.schedule();
      }
    }
  }

  /**
   * Queue one event; the promise settles with the fate of the unit that carries it. When the transport's
   * probe says a consumer started to wait for the lane's events, the batch goes at once (see
   * `Transport.sendNowProbe`): batches then hold what piled up while the consumer woke and worked. Bulk
   * calls (`addFitted`) keep full batches.
   */
  add(lane: Lane, event: OutgoingEvent, size: number): Promise<void> {
    if (this.closed) return Promise.reject(new ClosedError('publisher'));
    if (this.pending >= this.opts.maxPendingEvents || this.waiters.length > 0) return this.overflow(lane, event, size);
    const p = this.push(lane, event, size, this.ownPromises);
    const sendNow = lane.sendNow;
    if (sendNow !== undefined && this.open.events > 0 && this.opts.maxWaitMs === 0 && sendNow(lane.partition)) this.flush();
    return p;
  }

  /** `own`: the event gets a promise of its own (`partialUnits`), made before the batch may leave. */
  private push(lane: Lane, event: OutgoingEvent, size: number, own = false): Promise<void> {
    const unit = this.place(lane, event, size);
    const p = own ? unit.ownPromise(unit.count - 1) : unit.promise;
    this.queued();
    return p;
  }

  /** Puts `event` last in the lane's unit of the open batch (a new unit when there is none or it is full). */
  private place(lane: Lane, event: OutgoingEvent, size: number): Unit {
    const open = this.open;
    let unit = lane.unit;
    if (lane.gen !== this.gen || unit === undefined || unit.events.length >= this.opts.maxUnitEvents || (unit.bytes > 0 && unit.bytes + size > this.unitBytes)) {
      unit = new Unit(lane.type, lane.partition);
      lane.unit = unit;
      lane.gen = this.gen;
      open.units.push(unit);
    }
    unit.events.push(event);
    unit.count++;
    unit.bytes += size;
    open.events++;
    open.bytes += size;
    this.pending++;
    return unit;
  }

  /** After `place`: the open batch leaves when full, else at the next microtask (or `maxWaitMs`). */
  private queued(): void {
    const open = this.open;
    if (open.events >= this.opts.maxEvents || open.bytes >= this.opts.maxBytes) {
      this.seal();
      this.flush();
    } else if (!this.scheduled) {
      this.schedule();
    }
  }

  private overflow(lane: Lane, event: OutgoingEvent, size: number): Promise<void> {
    if (this.opts.onFull === 'reject') {
      return Promise.reject(new BackpressureError(this.pending, this.opts.maxPendingEvents));
    }
    return new Promise<Promise<void>>((resolve) => {
      this.waiters.push(new Waiter(lane, event, size, resolve));
    }).then((p) => p);
  }

  private schedule(): void {
    if (this.inFlight >= this.opts.maxInFlight) return; // a returning write will flush
    this.scheduled = true;
    if (this.opts.maxWaitMs > 0) this.timer = setTimeout(this.flushNow, this.opts.maxWaitMs);
    else void RESOLVED.then(this.flushNow);
  }

  private seal(): void {
    if (this.open.events === 0) return;
    this.ready.push(this.open);
    this.open = new Batch();
    this.gen++;
  }

  /** Send what is ready (and the open batch) while write slots are free. */
  private flush(): void {
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
    if (this.inFlight >= this.opts.maxInFlight) return;
    this.flushing = true;
    try {
      do {
        this.flushAgain = false;
        this.seal();
        while (this.inFlight < this.opts.maxInFlight && this.ready.length > 0) this.dispatch(this.ready.shift()!);
      } while (this.flushAgain && this.inFlight < this.opts.maxInFlight);
    } finally {
      this.flushing = false;
      this.flushAgain = false;
    }
  }

  private flushing = false;
  private flushAgain = false;

  private dispatch(batch: Batch): void {
    this.inFlight++;
    this.stats.batches++;
    this.stats.units += batch.units.length;
    let result: Promise<WriteResult> | WriteResult;
    try {
      result = this.write(
        batch.units,
        () => this.freeSlot(batch),
        (i) => this.unitWritten(batch, i),
      );
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
   * The transport says a write waits on something slow (a Cluster master in failover): its slot goes to the
   * next batch, so writes to the other nodes do not queue behind it. Its events stay pending
   * (`maxPendingEvents` still bounds them) until it settles.
   */
  private freeSlot(batch: Batch): void {
    if (batch.slotFreed) return;
    batch.slotFreed = true;
    this.inFlight--;
    this.stats.slotsFreed++;
    this.slotFree();
  }

  /**
   * The transport reports unit `i` of a write in flight as written (a Cluster write waiting on one slow master
   * while the others replied): its publishes resolve now, and they stop counting as pending. The write's own
   * outcome for the unit is ignored when it settles.
   */
  private unitWritten(batch: Batch, i: number): void {
    const unit = batch.units[i];
    if (batch.settled || unit === undefined || batch.early?.[i] === 1) return;
    (batch.early ??= new Uint8Array(batch.units.length))[i] = 1;
    batch.earlyEvents += unit.count;
    this.pending -= unit.count;
    this.stats.events += unit.count;
    unit.settle(undefined);
    this.admitWaiters();
    this.drainedIfIdle();
  }

  private settle(batch: Batch, res: WriteResult, failure: unknown): void {
    if (!batch.slotFreed) {
      batch.slotFreed = true;
      this.inFlight--;
    }
    batch.settled = true;
    const events = batch.events - batch.earlyEvents;
    this.pending -= events;
    const units = batch.units;
    const early = batch.early;
    const failed = failure !== undefined ? asTransportError(failure) : undefined;
    for (let i = 0; i < units.length; i++) {
      if (early !== undefined && early[i] === 1) continue; // settled already (`unitWritten`)
      const own = res ? res[i] : undefined;
      this.stats.failedEvents += units[i]!.settle(failed ?? (own ? asTransportError(own) : undefined));
    }
    this.stats.events += events;
    this.admitWaiters();
    this.slotFree();
    this.drainedIfIdle();
  }

  private drainedIfIdle(): void {
    if (this.pending === 0 && this.drained.length > 0) {
      const done = this.drained;
      this.drained = [];
      for (const d of done) d();
    }
  }

  /**
   * A write slot came free (a write settled, or the transport freed its slot). Adaptive step: what
   * accumulated while the write was out leaves now (a lingering batch is scheduled: it was not while every
   * slot was busy); producers waiting for a slot go on.
   */
  private slotFree(): void {
    if (this.ready.length > 0 || (this.open.events > 0 && this.opts.maxWaitMs === 0)) this.flush();
    else if (this.open.events > 0 && !this.scheduled) this.schedule();
    if (this.writableWaiters.length > 0 && !this.saturated) {
      const ws = this.writableWaiters;
      this.writableWaiters = [];
      for (const w of ws) w();
    }
  }

  private admitWaiters(): void {
    while (this.waiters.length > 0 && this.pending < this.opts.maxPendingEvents) {
      const w = this.waiters.shift()!;
      w.resolve(this.closed ? Promise.reject(new ClosedError('publisher')) : this.push(w.lane, w.event, w.size, this.ownPromises));
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
    if (this.open.events > 0) this.seal();
    this.flush();
    return this.open.events === 0 && this.ready.length === 0;
  }

  /** Counts an event a caller wrote to the transport itself (`tryPublish`) as one batch of one unit. */
  countWritten(): void {
    this.stats.events++;
    this.stats.batches++;
    this.stats.units++;
  }

  /** Send everything buffered now and resolve when nothing is pending. */
  flushAll(): Promise<void> {
    if (this.open.events > 0) {
      this.seal();
    }
    this.flush();
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

function asTransportError(err: unknown): Error {
  if (err instanceof EventlaneError) return err;
  const wrapped = new TransportError(`Transport write failed: ${err instanceof Error ? err.message : String(err)}`, { cause: err });
  const written = writtenCount(err);
  return written > 0 ? withWritten(wrapped, written) : wrapped;
}
