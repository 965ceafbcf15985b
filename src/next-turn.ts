/**
 * Delivery on the main thread for in-process transports (memory, native): handlers run in slices, and what
 * is left, like a new member's first delivery, waits for an event-loop turn so timers, I/O and other
 * members keep going.
 */

/** How long one turn's deliveries run before the rest waits for the next turn (bound: `DeliverySlice`). */
export const DELIVERY_SLICE_MS = 5;

/** Deliveries between two clock reads of a slice. */
const SLICE_CHECK = 32;

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
 *
 * The clock is read every SLICE_CHECK deliveries. The first read of a slice starts its DELIVERY_SLICE_MS and
 * schedules its end with the turn; a later read past them spends it, and `begin` is false until the turn ends.
 * So a turn delivers for at most DELIVERY_SLICE_MS plus 2 x SLICE_CHECK deliveries, and a turn of fewer
 * deliveries (an event now and then) neither reads the clock nor schedules anything.
 */
export class DeliverySlice {
  /** Deliveries since the slice began. */
  private n = 0;
  /** When the slice runs out (`performance.now()`); 0 until its first clock read. */
  private until = 0;
  private spent = false;
  private readonly reset = (): void => {
    this.n = 0;
    this.until = 0;
    this.spent = false;
  };

  /** False when this turn's slice is spent (deliver after the next turn). */
  begin(): boolean {
    return !this.spent;
  }

  /** After each delivery: true when the slice ran out. */
  over(): boolean {
    if (++this.n % SLICE_CHECK !== 0) return false;
    const now = performance.now();
    if (this.until === 0) {
      this.until = now + DELIVERY_SLICE_MS;
      setImmediate(this.reset);
      return false;
    }
    if (now <= this.until) return false;
    this.spent = true;
    return true;
  }
}
