/**
 * The batcher's write-slot accounting: how many writes count against `maxInFlight` now. A sent batch takes a
 * slot and gives it back once, when the transport frees it early (a write waiting on a slow node) or when the
 * write settles, whichever comes first (`Batch.slotFreed`). Bulk producers wait here (`waitWritable`) until the
 * batcher says sealed batches no longer wait for a slot (`wake`).
 */
import type { Batch } from './batch-units.js';

export class WriteSlots {
  /** Writes sent whose slot is not free again yet. */
  inFlight = 0;
  private writableWaiters: (() => void)[] = [];

  constructor(readonly max: number) {}

  /** Every slot is taken: no batch can be sent now. */
  get full(): boolean {
    return this.inFlight >= this.max;
  }

  /** A batch is sent: it takes a slot. */
  take(): void {
    this.inFlight++;
  }

  /** Gives back `batch`'s slot unless it was given back already; true when this call gave it back. */
  release(batch: Batch): boolean {
    if (batch.slotFreed) return false;
    batch.slotFreed = true;
    this.inFlight--;
    return true;
  }

  /** Resolves at the next `wake`. */
  waitWritable(): Promise<void> {
    return new Promise<void>((resolve) => this.writableWaiters.push(resolve));
  }

  /** Whether some producer waits for `wake`. */
  get waited(): boolean {
    return this.writableWaiters.length > 0;
  }

  /** Resolves every `waitWritable` promise made so far. */
  wake(): void {
    const ws = this.writableWaiters;
    this.writableWaiters = [];
    for (const w of ws) w();
  }
}
