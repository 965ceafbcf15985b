/**
 * The batches a consumer popped with `hold`: their records stay in the ring until their events finish, and are
 * acknowledged in the core as they do, every ACK_EVERY finished events and at the end (so a thread that dies
 * has few finished events to be delivered again). In order, that is the finished prefix; events that finish
 * out of order (concurrency > 1) are acknowledged in runs (the core takes acks in any order), so one slow
 * event does not hold back the acknowledgement of the events after it. A batch leaves the set once all its
 * events are acknowledged.
 */
import type { PartitionCore } from '../../native/js/core-api.js';

/** Records of one pop held in the ring, and how far their events are finished and acknowledged. */
export interface HeldBatch {
  partition: number;
  first: number;
  count: number;
  /** Events [0, acked) are acknowledged. */
  acked: number;
  /** Events [0, next) are finished. */
  next: number;
  /** Once events finish out of order (concurrency > 1), each event's state: 0 running or waiting, 1 finished, 2 acknowledged. */
  done: Uint8Array | undefined;
  /** Events finished and not acknowledged. */
  unacked: number;
}

const ACK_EVERY = 64;

export class HeldBatches {
  /** Every batch popped with `hold` and not yet acknowledged. */
  private readonly held = new Set<HeldBatch>();

  constructor(
    private readonly core: PartitionCore,
    private readonly lane: number,
  ) {}

  /** Records [first, first + count) of `partition` were just popped with `hold`. */
  add(partition: number, first: number, count: number): HeldBatch {
    const b: HeldBatch = { partition, first, count, acked: 0, next: 0, done: undefined, unacked: 0 };
    this.held.add(b);
    return b;
  }

  /** Event `index` of a held batch is finished: acknowledges what is finished every ACK_EVERY events, and at the end. */
  release(b: HeldBatch, index: number): void {
    b.unacked++;
    if (b.done === undefined && index === b.next) {
      b.next++;
    } else {
      let d = b.done;
      if (d === undefined) {
        // The first event to finish out of order: from here on, each event's state.
        d = b.done = new Uint8Array(b.count);
        d.fill(2, 0, b.acked);
        d.fill(1, b.acked, b.next);
      }
      d[index] = 1;
      while (b.next < b.count && d[b.next] !== 0) b.next++;
    }
    if (b.next === b.count || b.unacked >= ACK_EVERY) this.ackFinished(b);
  }

  /** Acknowledges a held batch's finished events: the prefix, or (out of order) each run of them. */
  private ackFinished(b: HeldBatch): void {
    const d = b.done;
    if (d === undefined) {
      this.core.ack(this.lane, b.partition, (b.first + b.acked) >>> 0, b.next - b.acked);
      b.acked = b.next;
    } else {
      for (let i = b.acked; i < b.count;) {
        if (d[i] !== 1) {
          i++;
          continue;
        }
        const from = i;
        while (i < b.count && d[i] === 1) d[i++] = 2;
        this.core.ack(this.lane, b.partition, (b.first + from) >>> 0, i - from);
      }
      while (b.acked < b.count && d[b.acked] === 2) b.acked++;
    }
    b.unacked = 0;
    if (b.acked === b.count) this.held.delete(b);
  }

  /**
   * Acknowledges every event not acknowledged yet, finished or not, and forgets every batch: what is handed
   * back leaves the ring (the caller passes it on to another member), and a handler settling later
   * acknowledges nothing more.
   */
  ackAll(): void {
    for (const b of this.held) {
      if (b.done !== undefined) for (let i = b.acked; i < b.count; i++) b.done[i] ||= 1;
      b.next = b.count;
      this.ackFinished(b);
    }
    this.held.clear();
  }
}
