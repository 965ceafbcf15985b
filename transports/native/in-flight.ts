/**
 * The events a worker thread is handling, in shared memory, so that when the thread dies the main thread
 * knows which events it had started and not finished: those are charged the death, the rest of what it held
 * goes back uncharged (NativeGroup.recover).
 *
 * Layout: one slot of SLOT_INTS int32s per handler that may run at once (`concurrency`). A slot is
 * [kind, a, b]: EMPTY; PLACE (a = partition, b = k: the k-th record the thread still holds in that
 * partition's ring, used with concurrency 1 only, where events finish in ring order); or HASHED (a, b = the
 * two halves of the event id's 53-bit hash). A slot is filled before its handler is called and emptied
 * after its handler settled, and `kind` is written after `a` and `b`, so a thread that dies at any point
 * leaves each slot empty or naming an event whose handler was called.
 */

export const SLOT_INTS = 3;
const EMPTY = 0;
const PLACE = 1;
const HASHED = 2;

/** Bytes of the shared buffer for a thread running up to `concurrency` handlers at once. */
export function inFlightBytes(concurrency: number): number {
  return 4 * SLOT_INTS * concurrency;
}

/** The halves of a 53-bit hash of `id` (cyrb53): [low 32 bits, high 21 bits]. */
function idHashParts(id: string): [number, number] {
  let h1 = 0xdeadbeef;
  let h2 = 0x41c6ce57;
  for (let i = 0; i < id.length; i++) {
    const c = id.charCodeAt(i);
    h1 = Math.imul(h1 ^ c, 2654435761);
    h2 = Math.imul(h2 ^ c, 1597334677);
  }
  h1 = Math.imul(h1 ^ (h1 >>> 16), 2246822507) ^ Math.imul(h2 ^ (h2 >>> 13), 3266489909);
  h2 = Math.imul(h2 ^ (h2 >>> 16), 2246822507) ^ Math.imul(h1 ^ (h1 >>> 13), 3266489909);
  return [h1 >>> 0, h2 & 0x1fffff];
}

const joinHash = (lo: number, hi: number): number => (hi & 0x1fffff) * 0x100000000 + (lo >>> 0);

/** The 53-bit hash of an event id, as the main thread matches it against a dead thread's slots. */
export function idHash(id: string): number {
  const [lo, hi] = idHashParts(id);
  return joinHash(lo, hi);
}

/**
 * Worker side: takes a free slot as a handler starts and gives it back as the handler settles. Invariant:
 * the free stack holds exactly the slots whose kind is EMPTY.
 */
export class InFlightTable {
  private readonly free: Int32Array;
  private top: number;

  constructor(private readonly cell: Int32Array) {
    const slots = Math.floor(cell.length / SLOT_INTS);
    this.free = new Int32Array(slots);
    for (let s = 0; s < slots; s++) this.free[s] = slots - 1 - s;
    this.top = slots;
  }

  /** The handler of event `id` starts: returns its slot. */
  startById(id: string): number {
    const s = this.take();
    const [lo, hi] = idHashParts(id);
    this.cell[s * SLOT_INTS + 1] = lo | 0;
    this.cell[s * SLOT_INTS + 2] = hi;
    this.cell[s * SLOT_INTS] = HASHED;
    return s;
  }

  /** The handler of the k-th record the thread still holds in `partition` starts: returns its slot. */
  startByPlace(partition: number, k: number): number {
    const s = this.take();
    this.cell[s * SLOT_INTS + 1] = partition;
    this.cell[s * SLOT_INTS + 2] = k;
    this.cell[s * SLOT_INTS] = PLACE;
    return s;
  }

  /** The handler in slot `s` settled. */
  finish(s: number): void {
    this.cell[s * SLOT_INTS] = EMPTY;
    this.free[this.top++] = s;
  }

  private take(): number {
    if (this.top === 0) throw new Error('InFlightTable: more handlers started than its slots (concurrency)');
    return this.free[--this.top]!;
  }
}

/** Main-thread side: what a dead thread's slots say it had started and not finished. */
export class InFlightAtDeath {
  /** Slots that named an event. */
  readonly count: number;
  private readonly hashes = new Set<number>();
  /** `${partition}:${k}` of each PLACE slot. */
  private readonly places = new Set<string>();

  constructor(cell: Int32Array) {
    let count = 0;
    for (let i = 0; i + SLOT_INTS <= cell.length; i += SLOT_INTS) {
      const kind = cell[i];
      if (kind === HASHED) this.hashes.add(joinHash(cell[i + 1]!, cell[i + 2]!));
      else if (kind === PLACE) this.places.add(`${cell[i + 1]}:${cell[i + 2]}`);
      else continue;
      count++;
    }
    this.count = count;
  }

  /** Whether the event `id`, the k-th record the thread still held in `partition` (if it was one), had started. */
  started(id: string, partition: number, k: number | undefined): boolean {
    if (k !== undefined && this.places.size > 0 && this.places.has(`${partition}:${k}`)) return true;
    return this.hashes.size > 0 && this.hashes.has(idHash(id));
  }
}
