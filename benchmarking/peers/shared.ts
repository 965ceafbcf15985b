/**
 * What the peer rows share: how many operations each keeps in flight, and the loops that keep them there.
 */
import type { Measured } from '../lib/types.js';

/** Operations a peer keeps in flight: publishing calls, and jobs or messages handled at once by its consumer. */
export const PEER_CONCURRENCY = 16;

/** Jobs per `Queue.addBulk` call when BullMQ publishes many events. */
export const BULK = 1000;

/**
 * Calls `op(0) .. op(n - 1)` from `loops` async loops, each awaiting its call before taking the next index,
 * so at most `loops` calls are in flight. Rejects with the first failure (the other loops stop taking work).
 */
export async function inFlight(n: number, loops: number, op: (i: number) => Promise<unknown>): Promise<void> {
  let next = 0;
  let failed = false;
  await Promise.all(
    Array.from({ length: Math.min(loops, n) }, async () => {
      while (next < n && !failed) {
        try {
          await op(next++);
        } catch (err) {
          failed = true;
          throw err;
        }
      }
    }),
  );
}

/** Adds errors a peer reported outside the measured calls (worker or adapter errors) to an iteration's notes. */
export function withNotes(m: Measured, notes: readonly string[]): Measured {
  return notes.length > 0 ? { ...m, notes: [...(m.notes ?? []), ...notes] } : m;
}
