/**
 * What a batch is made of: a `Batch` holds one `Unit` per (type, partition) `Lane` it carries events of, and a
 * unit settles the publishes of its events with its fate, through its own promise or, per event, through
 * promises of their own (`UnitForm.partial`). A `Lane` remembers the unit it fills in the open batch.
 */
import { emptyArray } from './arrays.js';
import type { EventRun, OutgoingEvent, PublishUnit } from './transport.js';

/** A run the batcher can split where it crosses a batch or unit bound (`Run` of outgoing.ts). */
export interface SplittableRun extends EventRun {
  slice(from: number, to: number): SplittableRun;
}

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

function noop(): void {}

/** Settles one event's own promise: with no error it resolves. */
type Settle = (err: Error | undefined) => void;

/**
 * The promises of units that failed after their first events were written (`WriteSettlement.failed`), and how
 * many were: only such units are entered, so a unit written whole or failed whole costs nothing here.
 */
const WRITTEN_BEFORE_FAILURE = new WeakMap<Promise<void>, number>();

/**
 * How many of the first events of the unit whose promise is `p` were written before it failed (0 for a unit
 * that was written whole, failed whole, or has not settled). `publishMany` reads it once its units settled.
 */
export function writtenBeforeFailure(p: Promise<void>): number {
  return WRITTEN_BEFORE_FAILURE.get(p) ?? 0;
}

export class Unit implements PublishUnit {
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
   * Per event, the settle of its own promise (`add` with `UnitForm.partial`), or undefined for an event that
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
   * The unit's fate: written (`err` undefined), or failed after its first `written` events were written.
   * Returns how many of its events failed.
   */
  settle(err: Error | undefined, written: number): number {
    const own = this.own;
    if (err === undefined) {
      this.resolve();
      if (own !== undefined) for (let i = 0; i < own.length; i++) own[i]?.(undefined);
      return 0;
    }
    const n = written > 0 ? Math.min(written, this.count) : 0;
    if (n > 0) WRITTEN_BEFORE_FAILURE.set(this.promise, n);
    this.reject(err);
    if (own !== undefined) for (let i = 0; i < own.length; i++) own[i]?.(i < n ? undefined : err);
    return this.count - n;
  }

  release(): void {
    this.events = RELEASED;
    this.run = undefined;
  }
}

export class Batch {
  readonly units: Unit[] = emptyArray();
  events = 0;
  bytes = 0;
  /** Sent, and no longer counted in `inFlight` (the transport said it stalled, or it settled). */
  slotFreed = false;
  /** Units the transport settled through the write's `WriteSettlement` (1 at their index), and their events. */
  early: Uint8Array | undefined = undefined;
  earlyEvents = 0;
  settled = false;
  /** `performance.now()` as the write left, when `eventlane:batch` had a subscriber then; else -1. */
  sentAt = -1;
}
