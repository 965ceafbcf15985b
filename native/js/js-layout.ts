/**
 * The shared memory of the pure-JS partition core, as every thread that attaches to it sees it: the
 * buffers of a core, its lanes and their rings (`CoreState`, structured-cloned to worker threads), and the
 * Int32 indices of the words in a ring's and a lane's control block. A ring is slots of four words
 * {offset, length, end, UTF-16 length} into a byte arena, with the done marks in an array of their own.
 */

// Int32 indices in a ring's control block; 16 ints = 64 bytes apart to keep writers off each other's line.
export const TAIL_SLOT = 0;
export const TAIL_ARENA = 1;
export const COMMIT = 16;
export const HEAD = 32;
export const REL_SLOT = 48;
export const REL_ARENA = 49;
// Per-ring wake-up word (consumers of this partition alone sleep on it) and its sleeper count.
export const RING_SEQ = 64;
export const RING_WAITERS = 80;
export const CTL_INTS = 128;
// Lane control block: wake-up sequence and sleeper count, and 1 once the lane is freed (seen by every thread).
export const SEQ = 0;
export const FREED = 8;
export const WAITERS = 16;
/** Int32 words of a lane's control block. */
export const LANE_CTL_INTS = 32;

export interface RingState {
  ctl: SharedArrayBuffer;
  counters: SharedArrayBuffer;
  slots: SharedArrayBuffer;
  /**
   * Per slot: position + 1 of its last acknowledged record, so (position - capacity + 1) while the record
   * in it is unacknowledged; starts as if lap -1 were acknowledged.
   */
  done: SharedArrayBuffer;
  /** Per slot: who popped its record with `hold` (pop's `holder`, for takeHeld), 0 until then. */
  holders: SharedArrayBuffer;
  arena: SharedArrayBuffer;
}
export interface LaneState {
  ctl: SharedArrayBuffer;
  rings: RingState[];
}
export interface CoreState {
  capacity: number;
  arenaBytes: number;
  closed: SharedArrayBuffer;
  lanes: Record<number, LaneState>;
}

/** The buffers of a new, empty ring. */
export function newRingState(cap: number, arenaBytes: number): RingState {
  const done = new SharedArrayBuffer(cap * 4);
  const marks = new Int32Array(done);
  for (let i = 0; i < cap; i++) marks[i] = (i - cap + 1) | 0;
  return {
    ctl: new SharedArrayBuffer(CTL_INTS * 4),
    counters: new SharedArrayBuffer(8 * 8),
    slots: new SharedArrayBuffer(cap * 16),
    done,
    holders: new SharedArrayBuffer(cap * 4),
    arena: new SharedArrayBuffer(arenaBytes),
  };
}

/** Wakes the threads sleeping on the lane's word (any partition of it). */
export function notifyLane(ctl: Int32Array): void {
  Atomics.add(ctl, SEQ, 1);
  if (Atomics.load(ctl, WAITERS) > 0) Atomics.notify(ctl, SEQ);
}
