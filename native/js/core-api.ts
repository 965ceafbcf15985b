/**
 * The partition-core API shared by the N-API addon and its pure-JS fallback. One call moves a whole batch:
 * `push` takes the records of a batch as UTF-8 bytes plus their lengths; `pop` returns a batch as one string
 * plus record offsets.
 */

/** How `push` treats records that do not fit. */
export const PushMode = {
  /** Accept the prefix that fits; the caller waits and pushes the rest (`block`). */
  partial: 0,
  /** Accept all or nothing; refused records are counted as `rejected` (`error`). */
  allOrNothing: 1,
  /**
   * Evict the oldest records until everything fits, counting them as `droppedOldest` (`drop-oldest`). When
   * nothing is left to evict (the room is held by consumers: popped, not acknowledged) and none comes back
   * within 10 ms, the rest is dropped and counted as `droppedNewest`.
   */
  evictOldest: 2,
  /** Accept the prefix that fits and count the rest as `droppedNewest` (`drop-newest`). */
  dropNewest: 3,
  /**
   * Accept nothing: return `n` when all would fit now, else 0, counting nothing (`tryPublish`). Exact when
   * every producer of the ring is the calling thread (room only grows meanwhile).
   */
  probe: 4,
  /**
   * Accept nothing and count all `n` as `rejected` (`error` with several groups: the unit was refused
   * because another group's ring had no room). Returns 0.
   */
  refuse: 5,
} as const;

/** What a core's lanes take, from `usage()`. */
export interface CoreUsage {
  /** Lanes allocated (created and not freed, or freed and still in use by a call on another thread). */
  lanes: number;
  /** Bytes of their rings: slots (24 bytes each) and arenas. */
  bytes: number;
}

/** Counter snapshot of one partition ring, from `stats()`: exact, in records. */
export interface RingStats {
  pushed: number;
  popped: number;
  droppedNewest: number;
  droppedOldest: number;
  rejected: number;
  /** Records in the ring now, waiting to be popped. */
  size: number;
  /** Records popped by worker threads and not yet finished: they keep their room until then. */
  held: number;
}

export interface PartitionCore {
  readonly kind: 'native' | 'js';
  /** Records per ring (a power of two). */
  readonly capacity: number;
  /** Arena bytes per ring (a power of two). */
  readonly arenaBytes: number;
  readonly closed: boolean;
  /**
   * Creates `partitions` rings sharing one wake-up word; returns the lane id. The addon holds at most 4,096
   * lanes at once (freed ones count until the calls using them return): the next throws "too many lanes".
   */
  createLane(partitions: number): number;
  /**
   * Frees a lane, for every thread: from now on no call finds it (`push`, `ack`, `takeHeld` and `stats`
   * throw RangeError, `pop` returns null, `notify` does nothing), a `pop` waiting in it returns, and its
   * rings are given back once the calls already using it return. Its id never names a lane again (the addon
   * reuses the slot under a new generation; the JS core never reuses an id). False when there is no such
   * lane (never was, or freed already).
   */
  freeLane(lane: number): boolean;
  /**
   * The lanes allocated and their bytes. The addon counts the whole core (every thread); the JS core, the
   * lanes this thread's handle holds (a freed lane's buffers go once no thread holds them).
   */
  usage(): CoreUsage;
  /**
   * Pushes `n` records into a ring: record `i` is `byteLens[i]` UTF-8 bytes (consecutive in `bytes`) and
   * `charLens[i]` UTF-16 units as a JS string. The bytes are copied once, into the arena. Returns how many
   * were accepted (this is the synchronous try-publish: 0 = full). Throws `ERR_CLOSED`, or
   * `ERR_PAYLOAD_TOO_LARGE` when a record can never fit the arena.
   */
  push(lane: number, partition: number, bytes: Uint8Array, byteLens: Uint32Array, charLens: Uint32Array, n: number, mode: number): number;
  /**
   * Pops up to `max` records from the first non-empty ring of `parts[0..nParts)` (round-robin from `start`).
   * `info[0]` receives the count, `info[1]` the partition and, when `info` has a third entry, `info[2]` the
   * position of the first record. With `waitUs > 0` (worker threads only) it spins for `spinUs`, then sleeps
   * until data, close, or `waitUs` (capped at 50 ms). Returns null when empty. `offs` (max + 1 entries)
   * receives each record's start in the returned string and the end. With `hold`, the records keep their
   * room in the ring until `ack`, marked as `holder`'s (> 0; a consumer thread that dies holding them leaves
   * them to `takeHeld(lane, partition, holder)`); otherwise they are acknowledged at once.
   */
  pop(
    lane: number,
    parts: Uint32Array,
    nParts: number,
    start: number,
    max: number,
    info: Uint32Array,
    waitUs: number,
    spinUs: number,
    offs?: Uint32Array,
    hold?: boolean,
    holder?: number,
  ): string | null;
  /** Acknowledges `count` records popped with `hold` from `partition`, the first at position `first`; any order. */
  ack(lane: number, partition: number, first: number, count: number): void;
  /**
   * The records of a ring popped with `hold` and not acknowledged, oldest first, as `[text, offs]` (offs:
   * each record's start in `text` and the end), acknowledged now; null when there are none. For the main
   * thread after a consumer thread died: with `holder` > 0, only the records that holder popped (and any
   * claimed and not marked yet: a thread terminated inside its pop); without, every held record (those a
   * live consumer holds are then delivered twice).
   */
  takeHeld(lane: number, partition: number, holder?: number): [string, Uint32Array] | null;
  /** [pushed, popped, droppedNewest, droppedOldest, rejected, size, held] */
  stats(lane: number, partition: number): number[];
  /** Wakes threads waiting in `pop` on the lane. */
  notify(lane: number): void;
  /** Closes the core for every thread: pops stop waiting, pushes throw. */
  close(): void;
  /** Drops this thread's reference. */
  release(): void;
  /** A structured-cloneable handle for `attachCore` in a worker thread. */
  share(lane: number): SharedCoreHandle;
}

export type SharedCoreHandle = { kind: 'native'; id: number; lane: number } | { kind: 'js'; lane: number; state: unknown };

export function toRingStats(a: number[]): RingStats {
  return { pushed: a[0]!, popped: a[1]!, droppedNewest: a[2]!, droppedOldest: a[3]!, rejected: a[4]!, size: a[5]!, held: a[6] ?? 0 };
}

/** Bytes of one ring slot (native/src/ring.h Slot: offset, length, end, chars, holder, done mark). */
const SLOT_BYTES = 24;

/** Bytes one ring takes: its slots and its arena (what a lane costs per partition; Lane::BytesOf in core.h). */
export function ringBytes(capacity: number, arenaBytes: number): number {
  return capacity * SLOT_BYTES + arenaBytes;
}

/** Rounds up to a power of two. */
export function roundUpPow2(v: number): number {
  let p = 1;
  while (p < v) p *= 2;
  return p;
}
