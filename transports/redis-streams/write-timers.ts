/**
 * A publisher's timers, one interval for all its writes: each write sent is bounded by its reply time
 * (`bounded`), and a Cluster write out long gets its slow action (`watchSlow`).
 */
import { ConnectionError, EventlaneError } from '../../src/errors.js';
import type { WriteResult } from '../../src/transport.js';

/**
 * Cluster: a write still out after this long is reported stalled (`WriteSettlement.stalled`), so it no longer
 * holds a batcher write slot. A healthy write takes a few ms; one to a master in failover waits seconds
 * (ioredis retries it until a replica takes the slot over), and writes to the other masters must not queue
 * behind it.
 */
export const SLOW_WRITE_MS = 200;

interface InFlight {
  deadline: number;
  reject: (err: Error) => void;
  done: boolean;
}

interface SlowWatch {
  at: number;
  slow: () => void;
}

export interface TimerOptions {
  /** How long a write sent waits for its replies. */
  replyMs: number;
  /** The settings `replyMs` comes from, for the error message. */
  replySetting: string;
  /** How often the timer looks at the writes. */
  everyMs: number;
  /** The transport's address, for error messages. */
  address: string;
  /** A write's failure as the publish reports it. */
  wrap: (err: unknown) => Error;
}

export class WriteTimers {
  private readonly inflight = new Set<InFlight>();
  /** Cluster: writes out whose slow action has not run yet (see SLOW_WRITE_MS). */
  private readonly slow = new Set<SlowWatch>();
  private sweeper: NodeJS.Timeout | undefined;

  constructor(private readonly opts: TimerOptions) {}

  /**
   * Bounds a write's reply by `replyMs` from its sending, without a timer per write: writes in flight sit in a
   * set that one interval timer sweeps. The write's outcome is `result` of its value; a `result` that throws
   * fails the write.
   */
  bounded<T>(p: Promise<T>, result: (value: T) => WriteResult): Promise<WriteResult> {
    return new Promise<WriteResult>((resolve, reject) => {
      const w: InFlight = { deadline: Date.now() + this.opts.replyMs, reject, done: false };
      this.inflight.add(w);
      this.start();
      p.then(
        (res) => {
          if (!this.settle(w)) return;
          try {
            resolve(result(res));
          } catch (err) {
            reject(this.failure(err));
          }
        },
        (err: unknown) => {
          if (this.settle(w)) reject(this.failure(err));
        },
      );
    });
  }

  /** What a failed write rejects with: an EventlaneError as it is, anything else wrapped (`TimerOptions.wrap`). */
  private failure(err: unknown): Error {
    return err instanceof EventlaneError ? err : this.opts.wrap(err);
  }

  /** Takes `w` out of the writes in flight; false when it was already (its reply came, or the sweep gave up on it). */
  private settle(w: InFlight): boolean {
    if (w.done) return false;
    w.done = true;
    this.inflight.delete(w);
    return true;
  }

  /** Runs `slow` once `write` has been out SLOW_WRITE_MS from `from`, unless it settled before. */
  watchSlow(from: number, write: Promise<unknown>, slow: () => void): void {
    const w: SlowWatch = { at: from + SLOW_WRITE_MS, slow };
    this.slow.add(w);
    this.start();
    const done = (): void => void this.slow.delete(w);
    write.then(done, done);
  }

  private start(): void {
    if (this.sweeper !== undefined) return;
    this.sweeper = setInterval(() => this.sweep(), this.opts.everyMs);
    this.sweeper.unref();
  }

  private sweep(): void {
    if (this.inflight.size === 0 && this.slow.size === 0) {
      clearInterval(this.sweeper);
      this.sweeper = undefined;
      return;
    }
    const now = Date.now();
    for (const w of this.slow) {
      if (w.at > now) continue;
      this.slow.delete(w);
      w.slow();
    }
    const { replyMs, replySetting, address } = this.opts;
    for (const w of this.inflight) {
      if (w.deadline > now || !this.settle(w)) continue;
      w.reject(new ConnectionError(`Write to ${address} got no reply within ${replyMs} ms (${replySetting}); it may or may not have been applied`));
    }
  }

  close(): void {
    clearInterval(this.sweeper);
    this.sweeper = undefined;
  }
}
