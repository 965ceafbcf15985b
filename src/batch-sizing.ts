/**
 * The batcher's sizing: the open batch and where its units and the batch itself end. An event joins its lane's
 * unit in the open batch, or a new unit when the lane has none there or it is full (`maxUnitEvents`,
 * `maxUnitBytes`); a run becomes units of its own, split where it crosses a unit or batch bound. The batch is
 * `full` at `maxEvents` events or `maxBytes` bytes; `seal` moves it to the `ready` queue, where it waits for a
 * write slot, and opens the next. How large a batch grows otherwise is adaptive: it takes whatever is published
 * until it leaves (src/batch-sender.ts), which is at once while a write slot is free, and when a write returns
 * while every slot is busy.
 */
import { Batch, Unit, type Lane, type SplittableRun } from './batch-units.js';
import type { BatcherOptions } from './batcher.js';
import { Deque } from './deque.js';
import type { OutgoingEvent } from './transport.js';

export class BatchSizer {
  open = new Batch();
  /** Counts sealed batches: a lane's unit belongs to the open batch while the lane's `gen` matches. */
  gen = 0;
  // A deque: a burst past maxPendingEvents (or of one-event batches) can queue 100,000s here; Array#shift
  // would make draining them quadratic.
  readonly ready = new Deque<Batch>();
  /** Most bytes per unit: `maxUnitBytes`, at most `maxBytes`. */
  private readonly unitBytes: number;

  constructor(private readonly opts: BatcherOptions) {
    this.unitBytes = Math.min(opts.maxBytes, opts.maxUnitBytes ?? Infinity);
  }

  /** The open batch has reached `maxEvents` or `maxBytes`: it leaves now. */
  get full(): boolean {
    const open = this.open;
    return open.events >= this.opts.maxEvents || open.bytes >= this.opts.maxBytes;
  }

  /** Puts `event` last in the lane's unit of the open batch (a new unit when there is none or it is full). */
  place(lane: Lane, event: OutgoingEvent, size: number): Unit {
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
    return unit;
  }

  /**
   * Puts the next part of `run`, from its event `from` on (`sizes[at + i]` is event i's size), into a unit of
   * its own in the open batch: as many events as fit under the unit and batch bounds, at least one. Returns the
   * unit (its `count` says how many events it took).
   */
  placeRun(lane: Lane, run: SplittableRun, sizes: Float64Array, at: number, from: number): Unit {
    const n = run.count;
    const { maxEvents, maxUnitEvents, maxBytes } = this.opts;
    const maxUnitBytes = this.unitBytes;
    const open = this.open;
    const most = Math.min(n, from + Math.min(maxUnitEvents, Math.max(1, maxEvents - open.events)));
    let to = from;
    let bytes = 0;
    while (to < most) {
      const size = sizes[at + to]!;
      if (bytes > 0 && bytes + size > maxUnitBytes) break; // the unit is full (place starts a new unit there)
      bytes += size;
      to++;
      if (open.bytes + bytes >= maxBytes) break; // the batch is full (it is sealed there)
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
    return unit;
  }

  /** Moves the open batch, unless empty, to the ready queue, and opens a new one. */
  seal(): void {
    if (this.open.events === 0) return;
    this.ready.push(this.open);
    this.open = new Batch();
    this.gen++;
  }
}
