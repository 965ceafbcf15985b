/**
 * One ring of the pure-JS partition core, over its shared buffers (js-layout.ts), with the addon's
 * semantics: free-running 32-bit positions, claim at the head with a CAS; claimed records are acknowledged
 * in any order (a per-slot done mark holding position + 1, moved from one lap to the next by a CAS, so that a
 * late ack of records takeHeld took changes nothing) and the release head moves over the done ones in a row.
 * One producer thread per ring (the thread that owns the transport) pushes; any thread pops, acknowledges
 * and takes back. Each thread has its own JsRing over the same buffers.
 */
import { PushMode } from './core-api.js';
import { COMMIT, HEAD, notifyLane, REL_ARENA, REL_SLOT, RING_SEQ, RING_WAITERS, TAIL_ARENA, TAIL_SLOT, type RingState } from './js-layout.js';

/**
 * drop-oldest: how long a push waits for consumers to hand back room when nothing is left to evict, before
 * it drops the rest of its records as the newest (addon.cc kEvictWaitUs). A worker thread that releases what
 * it pops at once holds it for microseconds, unless it is descheduled in between: the wait must outlast such a
 * descheduling on a loaded machine (the wait itself spinning on one of its cores), or the newest events are dropped.
 */
const EVICT_WAIT_MS = 10;
/** While it waits, the push sleeps this long at a time (ms), until a release moves the ring's release head. */
const EVICT_NAP_MS = 0.05;

export class JsRing {
  readonly ctl: Int32Array;
  /** [pushed, (popped), droppedNewest, droppedOldest, rejected]: written by the ring's one producer thread. */
  readonly counters: Float64Array;
  /** Entry 1 of the same buffer, as an int64: popped, added to atomically (any thread pops). */
  readonly counters64: BigInt64Array;
  readonly slots: Int32Array;
  readonly done: Int32Array;
  readonly holders: Uint32Array;
  readonly arena: Buffer;
  /** Set by `fit`: the bytes of the records that fit, and the bytes skipped at the arena's end before them. */
  private fitBytes = 0;
  private fitPad = 0;
  constructor(
    readonly state: RingState,
    readonly cap: number,
    readonly arenaBytes: number,
    /** The control block of the ring's lane: a push wakes the lane's sleepers too. */
    private readonly laneCtl: Int32Array,
  ) {
    this.ctl = new Int32Array(state.ctl);
    this.counters = new Float64Array(state.counters);
    this.counters64 = new BigInt64Array(state.counters);
    this.slots = new Int32Array(state.slots);
    this.done = new Int32Array(state.done);
    this.holders = new Uint32Array(state.holders);
    this.arena = Buffer.from(state.arena);
  }
  /**
   * Snapshots: the trailing position is read first (it never passes the leading one, so the difference
   * cannot go below 0), and the result is capped at the capacity (the leading one may have gone on since).
   */
  size(): number {
    const h = Atomics.load(this.ctl, HEAD);
    return Math.min(this.cap, (Atomics.load(this.ctl, COMMIT) - h) >>> 0);
  }
  held(): number {
    const r = Atomics.load(this.ctl, REL_SLOT);
    return Math.min(this.cap, (Atomics.load(this.ctl, HEAD) - r) >>> 0);
  }

  /** Wakes the threads sleeping on this ring's word (consumers of its partition alone). */
  wake(): void {
    Atomics.add(this.ctl, RING_SEQ, 1);
    if (Atomics.load(this.ctl, RING_WAITERS) > 0) Atomics.notify(this.ctl, RING_SEQ);
  }

  /**
   * Throws unless records [0, n) are within the length arrays and `bytes`, and each fits the ring (at most
   * half the arena less the batch separator: ERR_PAYLOAD_TOO_LARGE).
   */
  checkBatch(bytes: Uint8Array, lens: Uint32Array, charLens: Uint32Array, n: number): void {
    if (n > lens.length || n > charLens.length) throw new RangeError('n exceeds the length arrays');
    let total = 0;
    for (let i = 0; i < n; i++) {
      if (lens[i]! > this.arenaBytes / 2 - 1) {
        throw Object.assign(new RangeError(`record of ${lens[i]} bytes exceeds the limit of ${this.arenaBytes / 2 - 1} bytes (half the ${this.arenaBytes}-byte arena)`), {
          code: 'ERR_PAYLOAD_TOO_LARGE',
        });
      }
      total += lens[i]!;
    }
    if (total > bytes.byteLength) throw new RangeError('byteLens exceed the bytes given');
  }

  /**
   * Writes records [0, n) of a checked batch (`checkBatch`) as `mode` (partial to probe; see
   * PartitionCore.push) says, and returns how many it took. A batch takes one or more runs of slots and
   * arena bytes, each followed by a separator byte; a run that does not fit before the arena's end starts
   * at the arena's start.
   */
  push(bytes: Uint8Array, lens: Uint32Array, charLens: Uint32Array, n: number, mode: number): number {
    const { ctl, slots, holders, arena, cap, arenaBytes } = this;
    const mask = cap - 1;
    let done = 0;
    let srcOff = 0;
    let evictDeadline = 0;
    while (done < n) {
      const t = ctl[TAIL_SLOT]!;
      const ta = ctl[TAIL_ARENA]!;
      const relSlot = Atomics.load(ctl, REL_SLOT);
      const relArena = Atomics.load(ctl, REL_ARENA);
      const freeSlots = cap - ((t - relSlot) >>> 0);
      const freeBytes = arenaBytes - ((ta - relArena) >>> 0);
      const off = (ta >>> 0) & (arenaBytes - 1);
      const k = this.fit(lens, done, Math.min(n - done, freeSlots), freeBytes, arenaBytes - off);
      const bytes_ = this.fitBytes;
      const pad = this.fitPad;
      if (mode === PushMode.probe) return k === n ? n : 0;
      if (k === 0 || (mode === PushMode.allOrNothing && k < n)) {
        if (mode !== PushMode.evictOldest) break;
        if (this.evict(n - done) > 0) continue;
        evictDeadline = this.napForRoom(relSlot, evictDeadline);
        if (evictDeadline < 0) break;
        continue;
      }
      const dst = pad ? 0 : off;
      let pos = dst;
      let logical = (ta + pad) | 0;
      for (let i = 0; i < k; i++) {
        const s = ((t + i) & mask) * 4;
        const len = lens[done + i]!;
        slots[s] = pos;
        slots[s + 1] = len;
        slots[s + 3] = charLens[done + i]!;
        holders[(t + i) & mask] = 0;
        pos += len;
        logical = (logical + len) | 0;
        slots[s + 2] = i + 1 === k ? (logical + 1) | 0 : logical;
      }
      arena.set(bytes.subarray(srcOff, srcOff + bytes_), dst);
      arena[dst + bytes_] = 0x20; // batch separator: JSON whitespace
      ctl[TAIL_SLOT] = (t + k) | 0;
      ctl[TAIL_ARENA] = (logical + 1) | 0;
      Atomics.store(ctl, COMMIT, (t + k) | 0);
      this.counters[0]! += k;
      done += k;
      srcOff += bytes_;
      if (mode === PushMode.allOrNothing) break;
    }
    return this.pushed(n, done, mode);
  }

  /**
   * How many of records [from, from + maxN) fit in the `freeBytes` of the arena, `room` of which are before
   * its end: at the tail, or (when more fit so) from the arena's start, skipping the `room` bytes. Sets
   * `fitBytes` and `fitPad` (the bytes skipped: 0, or `room`).
   */
  private fit(lens: Uint32Array, from: number, maxN: number, freeBytes: number, room: number): number {
    this.fitPad = 0;
    const k = this.fitIn(lens, from, maxN, Math.min(freeBytes, room));
    if (k === maxN || freeBytes <= room) return k;
    const bytes = this.fitBytes;
    const k2 = this.fitIn(lens, from, maxN, freeBytes - room);
    if (k2 > k) {
      this.fitPad = room;
      return k2;
    }
    this.fitBytes = bytes;
    return k;
  }

  /** How many of records [from, from + maxN) fit in `avail` bytes with a separator byte after them; sets `fitBytes`. */
  private fitIn(lens: Uint32Array, from: number, maxN: number, avail: number): number {
    let sum = 0;
    let k = 0;
    while (k < maxN && sum + lens[from + k]! + 1 <= avail) sum += lens[from + k++]!;
    this.fitBytes = sum;
    return k;
  }

  /**
   * drop-oldest with nothing left to evict: the room is held by consumers (popped, not acknowledged). One
   * between its claim and its ack hands it back at once; a handler that holds what it popped (worker threads
   * of a group made by a transport with another strategy) may take any time, and so may a thread terminated
   * mid-pop. The push waits briefly (sleeping) for the release head to move from `relSlot`, then drops the
   * rest as the newest rather than freeze the event loop. Returns the wait's deadline (set on the first call,
   * `deadline` 0), or -1 once it has passed.
   */
  private napForRoom(relSlot: number, deadline: number): number {
    const now = performance.now();
    if (deadline === 0) deadline = now + EVICT_WAIT_MS;
    if (now >= deadline) return -1;
    // Sleep rather than spin: the core this thread leaves is what the holder may need to release.
    Atomics.wait(this.ctl, REL_SLOT, relSlot, EVICT_NAP_MS);
    return deadline;
  }

  /** After a push took `done` of `n` records: wakes the ring's and the lane's sleepers, counts what it did not take; returns `done`. */
  private pushed(n: number, done: number, mode: number): number {
    if (done > 0) {
      this.wake();
      notifyLane(this.laneCtl);
    }
    if (done < n) {
      if (mode === PushMode.dropNewest || mode === PushMode.evictOldest) this.counters[2]! += n - done;
      if (mode === PushMode.allOrNothing) this.counters[4]! += n - done;
    }
    return done;
  }

  /**
   * Acknowledges the claimed records at positions [h, h+k); any thread, any order. A record already
   * acknowledged, or taken by takeHeld (its slot maybe reused since), is left alone: a CAS from the
   * unacknowledged mark, where a store could overwrite the mark of the slot's next lap.
   */
  ack(h: number, k: number): void {
    const { done, cap } = this;
    const mask = cap - 1;
    for (let i = 0; i < k; i++) {
      const pos = (h + i) | 0;
      Atomics.compareExchange(done, pos & mask, (pos - cap + 1) | 0, (pos + 1) | 0);
    }
    this.advance();
  }

  /**
   * Moves the release head over every acknowledged slot in a row. Lock-free, as the addon's: ackers race
   * with a CAS, and one that lost goes on from where the winner stopped, so a thread terminated anywhere in
   * here holds nobody up. The two words move one at a time: the arena position first, only ever forward
   * (the records' bytes may go before their slots: they are acknowledged), then the slot position by a CAS
   * from where the scan started. A thread stopped in between leaves the slots to the next advance.
   */
  private advance(): void {
    const { ctl, done, slots } = this;
    const mask = this.cap - 1;
    let r = Atomics.load(ctl, REL_SLOT);
    for (;;) {
      const to = Atomics.load(ctl, HEAD);
      let e = r;
      while (e !== to && Atomics.load(done, e & mask) === ((e + 1) | 0)) e = (e + 1) | 0;
      if (e === r) return;
      const end = Atomics.load(slots, ((e - 1) & mask) * 4 + 2);
      // Still unreleased after that read, so `end` was still that record's (a producer had not reused the slot).
      const now = Atomics.load(ctl, REL_SLOT);
      if (now !== r) {
        r = now;
        continue;
      }
      for (let cur = Atomics.load(ctl, REL_ARENA); ((end - cur) | 0) > 0;) {
        const seen = Atomics.compareExchange(ctl, REL_ARENA, cur, end);
        if (seen === cur) break;
        cur = seen;
      }
      const seen = Atomics.compareExchange(ctl, REL_SLOT, r, e);
      r = seen === r ? e : seen;
    }
  }

  /** Evicts up to `max` of the oldest records no consumer holds; their room returns once those before are acknowledged. */
  evict(max: number): number {
    for (;;) {
      const h = Atomics.load(this.ctl, HEAD);
      const k = Math.min(max, (Atomics.load(this.ctl, COMMIT) - h) >>> 0);
      if (k === 0) return 0;
      if (Atomics.compareExchange(this.ctl, HEAD, h, (h + k) | 0) === h) {
        this.counters[3]! += k;
        this.ack(h, k);
        return k;
      }
    }
  }

  /** Records claimed and not acknowledged (by `holder`, when > 0; see PartitionCore.takeHeld), acknowledged now. */
  takeHeld(holder: number): [string, Uint32Array] | null {
    const { ctl, done, slots, arena, holders } = this;
    const mask = this.cap - 1;
    const to = Atomics.load(ctl, HEAD);
    const texts: string[] = [];
    for (let pos = Atomics.load(ctl, REL_SLOT); pos !== to; pos = (pos + 1) | 0) {
      const seen = (pos - this.cap + 1) | 0;
      if (Atomics.load(done, pos & mask) !== seen) continue; // acknowledged (in this lap or a later one)
      // Another consumer's; 0: claimed and not marked yet (a thread terminated between its claim and its marks).
      if (holder !== 0 && holders[pos & mask] !== holder && holders[pos & mask] !== 0) continue;
      // Copied first, then claimed: if its consumer acknowledged it meanwhile, the copy is dropped. Reused,
      // the slot may show the offset of one record and the length of another: a range outside the arena is
      // not read at all (the record was acknowledged).
      const s = (pos & mask) * 4;
      const off = slots[s]!;
      const len = slots[s + 1]!;
      if (off < 0 || len < 0 || off + len > this.arenaBytes) continue;
      const text = arena.toString('utf8', off, off + len);
      if (Atomics.compareExchange(done, pos & mask, seen, (pos + 1) | 0) === seen) texts.push(text);
    }
    this.advance();
    if (texts.length === 0) return null;
    const offs = new Uint32Array(texts.length + 1);
    for (let i = 0; i < texts.length; i++) offs[i + 1] = offs[i]! + texts[i]!.length;
    return [texts.join(''), offs];
  }
}

/** Claims up to `max` records of the ring and returns their text (`offs`, `info`: see PartitionCore.pop), or null when it is empty. */
export function popRing(ring: JsRing, max: number, info: Uint32Array, offs: Uint32Array | undefined, hold: boolean, holder: number): string | null {
  const { ctl } = ring;
  const mask = ring.cap - 1;
  let h: number;
  let k: number;
  for (;;) {
    h = Atomics.load(ctl, HEAD);
    k = Math.min(max, (Atomics.load(ctl, COMMIT) - h) >>> 0);
    if (k === 0) return null;
    if (Atomics.compareExchange(ctl, HEAD, h, (h + k) | 0) === h) break;
  }
  if (hold && holder !== 0) for (let i = 0; i < k; i++) ring.holders[(h + i) & mask] = holder;
  const out = claimedText(ring, h, k, offs);
  Atomics.add(ring.counters64, 1, BigInt(k));
  info[0] = k;
  if (info.length > 2) info[2] = h;
  if (!hold) ring.ack(h, k);
  return out;
}

/**
 * The text of the `k` records claimed at position `h`, with each record's start in it (`offs`, and the end
 * of the last). The records' bytes are one run of the arena, or two when the claim wrapped round its end.
 */
function claimedText(ring: JsRing, h: number, k: number, offs: Uint32Array | undefined): string {
  const { slots, arena } = ring;
  const mask = ring.cap - 1;
  let segStart = slots[(h & mask) * 4]!;
  let segEnd = segStart + slots[(h & mask) * 4 + 1]!;
  let charPos = slots[(h & mask) * 4 + 3]!;
  if (offs) offs[0] = 0;
  let wrapStart = -1;
  let wrapEnd = -1;
  for (let i = 1; i < k; i++) {
    const s = ((h + i) & mask) * 4;
    const off = slots[s]!;
    if (off < segEnd) {
      wrapStart = segStart;
      wrapEnd = segEnd;
      segStart = off;
    } else {
      charPos += off - segEnd; // 0, or the batch separator
    }
    if (offs) offs[i] = charPos;
    charPos += slots[s + 3]!;
    segEnd = off + slots[s + 1]!;
  }
  if (offs) offs[k] = charPos;
  // All ASCII when the text is as many UTF-16 units as bytes: a latin1 copy, no decoding.
  const bytes = segEnd - segStart + (wrapStart < 0 ? 0 : wrapEnd - wrapStart);
  const enc = charPos === bytes ? 'latin1' : 'utf8';
  return (wrapStart < 0 ? '' : arena.toString(enc, wrapStart, wrapEnd)) + arena.toString(enc, segStart, segEnd);
}
