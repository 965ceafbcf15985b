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
