/**
 * Delivery on the main thread for in-process transports (memory, native): handlers run in slices, and what
 * is left, like a new member's first delivery, waits for an event-loop turn so timers, I/O and other
 * members keep going.
 */

/** Longest one main-thread delivery loop runs before letting the event loop turn. */
export const DELIVERY_SLICE_MS = 5;

/** Runs `fn` after the current event-loop turn, once however often it is requested before then. */
export class NextTurn {
  private pending = false;
  constructor(private readonly fn: () => void) {}

  request(): void {
    if (this.pending) return;
    this.pending = true;
    setImmediate(() => {
      this.pending = false;
      this.fn();
    });
  }
}

/**
 * The delivery slice of one event-loop turn, shared by every pump in it. Async handlers settle in microtasks,
 * and each settle pumps again: a slice per pump call would never run out (one event each), so a backlog of
 * async-handled events would run to its end without yielding the turn, starving every timer and I/O.
 * The slice starts with the turn's first pump and ends with the turn.
 */
export class DeliverySlice {
  private until = 0;
  private spent = false;
  private n = 0;
  private readonly reset = (): void => {
    this.until = 0;
    this.spent = false;
  };

  /** Starts the turn's slice if none runs; false when this turn's slice is already spent (wait for the next turn). */
  begin(): boolean {
    if (this.until === 0) {
      this.until = performance.now() + DELIVERY_SLICE_MS;
      setImmediate(this.reset);
      return true;
    }
    return !this.spent;
  }

  /** After each delivery: true when the slice ran out (the clock is read every 32 deliveries). */
  over(): boolean {
    if ((++this.n & 31) !== 0 || performance.now() <= this.until) return false;
    this.spent = true;
    return true;
  }
}
