/**
 * Pure-JS partition core (SharedArrayBuffer + Atomics) with the addon's semantics, used when no binary
 * loads, or with `EVENTLANE_NATIVE=0`. Same ring layout idea: slots of four words {offset, length, end,
 * UTF-16 length} into a byte arena, with the done marks in an array of their own; free-running 32-bit positions, claim at the head with a CAS; claimed records are acknowledged in any order
 * (a per-slot done mark holding position + 1, moved from one lap to the next by a CAS, so that a late ack of
 * records takeHeld took changes nothing) and the release head moves over the done ones in a row. One
 * producer thread per ring (the thread that owns the transport).
 */
import { PushMode, ringBytes, roundUpPow2, type CoreUsage, type PartitionCore, type SharedCoreHandle } from './core-api.js';

// Int32 indices in a ring's control block; 16 ints = 64 bytes apart to keep writers off each other's line.
const TAIL_SLOT = 0;
const TAIL_ARENA = 1;
const COMMIT = 16;
const HEAD = 32;
const REL_SLOT = 48;
const REL_ARENA = 49;
// Per-ring wake-up word (consumers of this partition alone sleep on it) and its sleeper count.
const RING_SEQ = 64;
const RING_WAITERS = 80;
const CTL_INTS = 128;
/**
 * drop-oldest: how long a push waits for consumers to hand back room when nothing is left to evict, before
 * it drops the rest of its records as the newest (addon.cc kEvictWaitUs). A worker thread that releases what
 * it pops at once holds it for microseconds, unless it is descheduled in between: the wait must outlast such a
 * descheduling on a loaded machine (the wait itself spinning on one of its cores), or the newest events are dropped.
 */
const EVICT_WAIT_MS = 10;
/** While it waits, the push sleeps this long at a time (ms), until a release moves the ring's release head. */
const EVICT_NAP_MS = 0.05;
// Lane control block: wake-up sequence and sleeper count, and 1 once the lane is freed (seen by every thread).
const SEQ = 0;
const FREED = 8;
const WAITERS = 16;

interface RingState {
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
interface LaneState {
  ctl: SharedArrayBuffer;
  rings: RingState[];
}
interface CoreState {
  capacity: number;
  arenaBytes: number;
  closed: SharedArrayBuffer;
  lanes: Record<number, LaneState>;
}

class JsRing {
  readonly ctl: Int32Array;
  /** [pushed, (popped), droppedNewest, droppedOldest, rejected]: written by the ring's one producer thread. */
  readonly counters: Float64Array;
  /** Entry 1 of the same buffer, as an int64: popped, added to atomically (any thread pops). */
  readonly counters64: BigInt64Array;
  readonly slots: Int32Array;
  readonly done: Int32Array;
  readonly holders: Uint32Array;
  readonly arena: Buffer;
  constructor(
    readonly state: RingState,
    readonly cap: number,
    readonly arenaBytes: number,
  ) {
    this.ctl = new Int32Array(state.ctl);
    this.counters = new Float64Array(state.counters);
    this.counters64 = new BigInt64Array(state.counters);
    this.slots = new Int32Array(state.slots);
    this.done = new Int32Array(state.done);
    this.holders = new Uint32Array(state.holders);
    this.arena = Buffer.from(state.arena);
  }
  static create(cap: number, arenaBytes: number): JsRing {
    const done = new SharedArrayBuffer(cap * 4);
    const marks = new Int32Array(done);
    for (let i = 0; i < cap; i++) marks[i] = (i - cap + 1) | 0;
    return new JsRing(
      {
        ctl: new SharedArrayBuffer(CTL_INTS * 4),
        counters: new SharedArrayBuffer(8 * 8),
        slots: new SharedArrayBuffer(cap * 16),
        done,
        holders: new SharedArrayBuffer(cap * 4),
        arena: new SharedArrayBuffer(arenaBytes),
      },
      cap,
      arenaBytes,
    );
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

export class JsCore implements PartitionCore {
  readonly kind = 'js';
  private readonly closedFlag: Int32Array;
  private readonly lanes = new Map<number, { ctl: Int32Array; rings: JsRing[]; state: LaneState }>();
  /** Ids are never reused (no bound to keep): an id kept after its lane was freed names nothing. */
  private nextLane = 0;
  private released = false;

  private constructor(private readonly state: CoreState) {
    this.closedFlag = new Int32Array(state.closed);
    for (const [id, l] of Object.entries(state.lanes)) this.adopt(Number(id), l);
  }

  static create(capacity: number, arenaBytes: number): JsCore {
    if (!(capacity >= 2 && capacity <= 2 ** 24) || !(arenaBytes >= 1024 && arenaBytes <= 2 ** 30)) {
      throw new RangeError('capacity must be in [2, 16777216] and arenaBytes in [1024, 1073741824]');
    }
    return new JsCore({ capacity: roundUpPow2(capacity), arenaBytes: roundUpPow2(arenaBytes), closed: new SharedArrayBuffer(4), lanes: {} });
  }

  static attach(state: unknown): JsCore {
    return new JsCore(state as CoreState);
  }

  get capacity(): number {
    return this.state.capacity;
  }
  get arenaBytes(): number {
    return this.state.arenaBytes;
  }
  get closed(): boolean {
    return this.released || Atomics.load(this.closedFlag, 0) === 1;
  }

  private adopt(id: number, l: LaneState): void {
    this.lanes.set(id, { ctl: new Int32Array(l.ctl), rings: l.rings.map((r) => new JsRing(r, this.capacity, this.arenaBytes)), state: l });
    this.nextLane = Math.max(this.nextLane, id + 1);
  }

  private check(): void {
    if (this.closed) throw Object.assign(new Error('native core is closed'), { code: 'ERR_CLOSED' });
  }

  private lane(id: number) {
    const l = this.find(id);
    if (!l) throw new RangeError('bad lane or partition');
    return l;
  }

  /** The lane, unless it was freed (by any thread: this handle then lets go of its buffers too). */
  private find(id: number) {
    const l = this.lanes.get(id);
    if (l !== undefined && Atomics.load(l.ctl, FREED) === 1) {
      this.lanes.delete(id);
      return undefined;
    }
    return l;
  }

  createLane(partitions: number): number {
    this.check();
    if (!(partitions >= 1 && partitions <= 4096)) throw new RangeError('partitions must be in [1, 4096]');
    const state: LaneState = {
      ctl: new SharedArrayBuffer(32 * 4),
      rings: Array.from({ length: partitions }, () => JsRing.create(this.capacity, this.arenaBytes).state),
    };
    const id = this.nextLane;
    this.adopt(id, state);
    return id;
  }

  freeLane(laneId: number): boolean {
    const lane = this.find(laneId);
    if (!lane || Atomics.compareExchange(lane.ctl, FREED, 0, 1) !== 0) return false;
    this.lanes.delete(laneId);
    this.wakeAll(lane);
    return true;
  }

  usage(): CoreUsage {
    let lanes = 0;
    let bytes = 0;
    for (const id of [...this.lanes.keys()]) {
      const l = this.find(id);
      if (!l) continue;
      lanes++;
      bytes += l.rings.length * ringBytes(this.capacity, this.arenaBytes);
    }
    return { lanes, bytes };
  }

  push(laneId: number, partition: number, bytes: Uint8Array, lens: Uint32Array, charLens: Uint32Array, n: number, mode: number): number {
    this.check();
    const lane = this.lane(laneId);
    const ring = lane.rings[partition];
    if (!ring) throw new RangeError('bad lane or partition');
    if (n === 0) return 0;
    if (n > lens.length || n > charLens.length) throw new RangeError('n exceeds the length arrays');
    let total = 0;
    for (let i = 0; i < n; i++) {
      if (lens[i]! > ring.arenaBytes / 2 - 1) {
        throw Object.assign(new RangeError(`record of ${lens[i]} bytes exceeds the limit of ${ring.arenaBytes / 2 - 1} bytes (half the ${ring.arenaBytes}-byte arena)`), {
          code: 'ERR_PAYLOAD_TOO_LARGE',
        });
      }
      total += lens[i]!;
    }
    if (total > bytes.byteLength) throw new RangeError('byteLens exceed the bytes given');
    if (mode === PushMode.refuse) {
      ring.counters[4]! += n;
      return 0;
    }
    if (!(mode >= PushMode.partial && mode <= PushMode.probe)) throw new RangeError(`push: unknown mode ${mode}`);
    const { ctl, slots, holders, arena, cap, arenaBytes } = ring;
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
      const room = arenaBytes - off;
      const maxN = Math.min(n - done, freeSlots);
      let [k, bytes_] = fit(lens, done, maxN, Math.min(freeBytes, room));
      let pad = 0;
      if (k < maxN && freeBytes > room) {
        const [k2, b2] = fit(lens, done, maxN, freeBytes - room);
        if (k2 > k) [k, bytes_, pad] = [k2, b2, room];
      }
      if (mode === PushMode.probe) return k === n ? n : 0;
      if (k === 0 || (mode === PushMode.allOrNothing && k < n)) {
        if (mode === PushMode.evictOldest) {
          if (ring.evict(n - done) > 0) continue;
          // Nothing left to evict: the room is held by consumers (popped, not acknowledged). One between its
          // claim and its ack hands it back at once; a handler that holds what it popped (worker threads of a
          // group made by a transport with another strategy) may take any time, and so may a thread
          // terminated mid-pop. Wait briefly (sleeping), then drop the rest as the newest rather than freeze the event loop.
          const now = performance.now();
          if (evictDeadline === 0) evictDeadline = now + EVICT_WAIT_MS;
          if (now < evictDeadline) {
            // Sleep rather than spin: the core this thread leaves is what the holder may need to release.
            Atomics.wait(ctl, REL_SLOT, relSlot, EVICT_NAP_MS);
            continue;
          }
        }
        break;
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
      ring.counters[0]! += k;
      done += k;
      srcOff += bytes_;
      if (mode === PushMode.allOrNothing) break;
    }
    if (done > 0) {
      Atomics.add(ctl, RING_SEQ, 1);
      if (Atomics.load(ctl, RING_WAITERS) > 0) Atomics.notify(ctl, RING_SEQ);
      this.notifyLane(lane.ctl);
    }
    if (done < n) {
      if (mode === PushMode.dropNewest || mode === PushMode.evictOldest) ring.counters[2]! += n - done;
      if (mode === PushMode.allOrNothing) ring.counters[4]! += n - done;
    }
    return done;
  }

  pop(laneId: number, parts: Uint32Array, nParts: number, start: number, max: number, info: Uint32Array, waitUs: number, spinUs: number, offs?: Uint32Array, hold = false, holder = 0): string | null {
    if (offs && offs.length < Math.max(1, max) + 1) throw new RangeError('pop: offs (max + 1 entries) must hold at least ' + (Math.max(1, max) + 1) + ' entries');
    if (info.length < (hold ? 3 : 2)) throw new RangeError(`pop: info must hold at least ${hold ? 3 : 2} entries`);
    const lane = this.find(laneId);
    info[0] = 0;
    if (!lane || nParts === 0) return null;
    let deadline = 0;
    let spinUntil = 0;
    // One partition: sleep on its ring's word, so pushes to other partitions do not wake us.
    const single = nParts === 1 ? lane.rings[parts[0]!] : undefined;
    const word = single ? single.ctl : lane.ctl;
    const seqAt = single ? RING_SEQ : SEQ;
    const waitersAt = single ? RING_WAITERS : WAITERS;
    for (;;) {
      const seq = Atomics.load(word, seqAt);
      for (let i = 0; i < nParts; i++) {
        const p = parts[(start + i) % nParts]!;
        const ring = lane.rings[p];
        if (!ring) throw new RangeError('bad partition');
        const s = popRing(ring, max || 1, info, offs, hold, holder >>> 0);
        if (s !== null) {
          info[1] = p;
          return s;
        }
      }
      if (waitUs === 0 || this.closed || Atomics.load(lane.ctl, FREED) === 1) return null;
      const now = performance.now();
      if (deadline === 0) {
        deadline = now + Math.min(waitUs, 50_000) / 1000;
        spinUntil = now + spinUs / 1000;
      }
      if (now >= deadline) return null;
      if (now < spinUntil) continue;
      Atomics.add(word, waitersAt, 1);
      Atomics.wait(word, seqAt, seq, Math.max(0.001, deadline - now));
      Atomics.sub(word, waitersAt, 1);
    }
  }

  ack(laneId: number, partition: number, first: number, count: number): void {
    const ring = this.lane(laneId).rings[partition];
    if (!ring) throw new RangeError('bad lane or partition');
    if (count > ring.cap) throw new RangeError('ack count exceeds the capacity');
    ring.ack(first | 0, count);
  }

  takeHeld(laneId: number, partition: number, holder = 0): [string, Uint32Array] | null {
    const ring = this.lane(laneId).rings[partition];
    if (!ring) throw new RangeError('bad lane or partition');
    return ring.takeHeld(holder >>> 0);
  }

  stats(laneId: number, partition: number): number[] {
    const ring = this.lane(laneId).rings[partition];
    if (!ring) throw new RangeError('bad lane or partition');
    const c = ring.counters;
    return [c[0]!, Number(Atomics.load(ring.counters64, 1)), c[2]!, c[3]!, c[4]!, ring.size(), ring.held()];
  }

  /** Wakes every consumer of the lane (close, rebalance). */
  notify(laneId: number): void {
    const lane = this.find(laneId);
    if (lane) this.wakeAll(lane);
  }

  private wakeAll(lane: { ctl: Int32Array; rings: JsRing[] }): void {
    for (const r of lane.rings) {
      Atomics.add(r.ctl, RING_SEQ, 1);
      if (Atomics.load(r.ctl, RING_WAITERS) > 0) Atomics.notify(r.ctl, RING_SEQ);
    }
    this.notifyLane(lane.ctl);
  }

  private notifyLane(ctl: Int32Array): void {
    Atomics.add(ctl, SEQ, 1);
    if (Atomics.load(ctl, WAITERS) > 0) Atomics.notify(ctl, SEQ);
  }

  close(): void {
    Atomics.store(this.closedFlag, 0, 1);
    for (const id of this.lanes.keys()) this.notify(id);
  }

  release(): void {
    this.released = true;
    this.lanes.clear();
  }

  share(laneId: number): SharedCoreHandle {
    const l = this.lane(laneId);
    const state: CoreState = { ...this.state, lanes: { [laneId]: l.state } };
    return { kind: 'js', lane: laneId, state };
  }
}

function fit(lens: ArrayLike<number>, from: number, maxN: number, avail: number): [number, number] {
  let sum = 0;
  let k = 0;
  while (k < maxN && sum + lens[from + k]! + 1 <= avail) sum += lens[from + k++]!;
  return [k, sum];
}

function popRing(ring: JsRing, max: number, info: Uint32Array, offs: Uint32Array | undefined, hold: boolean, holder: number): string | null {
  const { ctl, slots, arena } = ring;
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
  const out = (wrapStart < 0 ? '' : arena.toString(enc, wrapStart, wrapEnd)) + arena.toString(enc, segStart, segEnd);
  Atomics.add(ring.counters64, 1, BigInt(k));
  info[0] = k;
  if (info.length > 2) info[2] = h;
  if (!hold) ring.ack(h, k);
  return out;
}
