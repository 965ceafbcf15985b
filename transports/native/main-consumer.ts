/**
 * A consumer on the main thread: `pump()` delivers what is in the rings now and never blocks. A long backlog
 * is delivered in slices of at most DELIVERY_SLICE_MS per event-loop turn (src/next-turn.ts), the rest after a
 * turn, so I/O, timers and other members keep going; a handler settling or a retry falling due pumps again in
 * a microtask. Records are released as they are popped, and nothing is reported to another thread: the
 * group reads `holding()` directly.
 */
import { DeliverySlice, NextTurn } from '../../src/next-turn.js';
import { PartitionConsumer } from './consumer.js';

export class MainThreadConsumer extends PartitionConsumer {
  private pumping = false;
  private wakeScheduled = false;
  /** This turn's delivery slice (pumps run by async handlers settling count against it too). */
  private readonly slice = new DeliverySlice();
  private readonly nextTurn = new NextTurn(() => this.pump());

  /** Delivers what is in the rings now, without waiting, within this turn's slice. */
  pump(): void {
    if (this.pumping || this.stopped) return;
    if (!this.slice.begin()) {
      this.resumeLater();
      return;
    }
    this.pumping = true;
    try {
      while (this.mayStart() && !this.stopped) {
        const env = this.next(0, 0);
        if (env === undefined) break;
        this.deliver(env, this.curAttempt, this.curPart, this.curBatch, this.curIndex);
        if (this.slice.over()) {
          this.resumeLater();
          break;
        }
      }
    } finally {
      this.pumping = false;
    }
  }

  /** Pumps after an event-loop turn (a new member's first pump, a long backlog's next slice). */
  resumeLater(): void {
    this.nextTurn.request();
  }

  protected wake(): void {
    if (!this.wakeScheduled && !this.pumping) {
      this.wakeScheduled = true;
      queueMicrotask(() => {
        this.wakeScheduled = false;
        this.pump();
      });
    }
  }

  /** Never waits; holds no records for a thread (holder 0). */
  protected pop(): string | null {
    return this.core.pop(this.lane, this.parts, this.nParts, this.cursor, this.s.batchSize, this.info, 0, 0, this.offs, this.s.hold, 0);
  }

  /** No table of running handlers on the main thread. */
  protected started(): number {
    return -1;
  }

  protected ended(): void {}

  protected publishHeld(): void {}

  protected parked(): void {}

  protected unparked(): void {}
}
