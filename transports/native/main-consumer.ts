/**
 * A consumer on the main thread: `pump()` (the delivery engine's, src/delivery-engine.ts) delivers what is in
 * the rings now and never blocks, in slices of at most DELIVERY_SLICE_MS per event-loop turn; a handler
 * settling or a retry falling due pumps again in a microtask. Records are released as they are popped, and nothing is reported to another thread: the
 * group reads `holding()` directly.
 */
import { PartitionConsumer } from './consumer.js';

export class MainThreadConsumer extends PartitionConsumer {
  private wakeScheduled = false;

  /** The next event in the rings now, without waiting (DeliveryEngine.pump calls this while a slot is free). */
  protected startNext(): boolean {
    const env = this.next(0, 0);
    if (env === undefined) return false;
    this.deliver(env, this.curAttempt, this.curPart, this.curBatch, this.curIndex);
    return true;
  }

  /** Pumps after an event-loop turn (a new member's first pump). */
  resumeLater(): void {
    this.pumpLater();
  }

  /** Pumps in a microtask, once however often it is woken before then. */
  protected wake(): void {
    if (this.wakeScheduled) return;
    this.wakeScheduled = true;
    queueMicrotask(() => {
      this.wakeScheduled = false;
      this.pump();
    });
  }

  /** Never waits; holds no records for a thread (holder 0). */
  protected pop(): string | null {
    return this.core.pop(this.lane, this.parts, this.nParts, this.cursor, this.s.batchSize, this.info, 0, 0, this.offs, this.s.hold, 0);
  }

  /** No table of running handlers on the main thread. */
  protected started(): number {
    return -1;
  }

  protected slotEnded(): void {}

  protected publishHeld(): void {}

  protected parked(): void {}

  protected unparked(): void {}
}
