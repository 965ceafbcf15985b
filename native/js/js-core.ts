/**
 * Pure-JS partition core (SharedArrayBuffer + Atomics) with the addon's semantics, used when no binary
 * loads, or with `EVENTLANE_NATIVE=0`. This module holds the core's lanes (a ring per partition, in
 * js-ring.ts, and a wake-up word per lane; memory layout in js-layout.ts) and the PartitionCore calls over
 * them: checking their arguments, finding the ring, and waiting in `pop` (spinning, then sleeping on the
 * ring's or the lane's word) until a push or a close wakes it.
 */
import { PushMode, ringBytes, roundUpPow2, type CoreUsage, type PartitionCore, type SharedCoreHandle } from './core-api.js';
import { FREED, LANE_CTL_INTS, newRingState, notifyLane, RING_SEQ, RING_WAITERS, SEQ, WAITERS, type CoreState, type LaneState } from './js-layout.js';
import { JsRing, popRing } from './js-ring.js';

/** A lane as this thread sees it: its control block, its rings, and the buffers behind them (to share). */
interface JsLane {
  ctl: Int32Array;
  rings: JsRing[];
  state: LaneState;
}

export class JsCore implements PartitionCore {
  readonly kind = 'js';
  private readonly closedFlag: Int32Array;
  private readonly lanes = new Map<number, JsLane>();
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
    const ctl = new Int32Array(l.ctl);
    this.lanes.set(id, { ctl, rings: l.rings.map((r) => new JsRing(r, this.capacity, this.arenaBytes, ctl)), state: l });
    this.nextLane = Math.max(this.nextLane, id + 1);
  }

  private check(): void {
    if (this.closed) throw Object.assign(new Error('native core is closed'), { code: 'ERR_CLOSED' });
  }

  private lane(id: number): JsLane {
    const l = this.find(id);
    if (!l) throw new RangeError('bad lane or partition');
    return l;
  }

  /** The lane's ring of `partition`. */
  private ring(laneId: number, partition: number): JsRing {
    const ring = this.lane(laneId).rings[partition];
    if (!ring) throw new RangeError('bad lane or partition');
    return ring;
  }

  /** The lane, unless it was freed (by any thread: this handle then lets go of its buffers too). */
  private find(id: number): JsLane | undefined {
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
      ctl: new SharedArrayBuffer(LANE_CTL_INTS * 4),
      rings: Array.from({ length: partitions }, () => newRingState(this.capacity, this.arenaBytes)),
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
    const ring = this.ring(laneId, partition);
    if (n === 0) return 0;
    ring.checkBatch(bytes, lens, charLens, n);
    if (mode === PushMode.refuse) {
      ring.counters[4]! += n;
      return 0;
    }
    if (!(mode >= PushMode.partial && mode <= PushMode.probe)) throw new RangeError(`push: unknown mode ${mode}`);
    return ring.push(bytes, lens, charLens, n, mode);
  }

  pop(laneId: number, parts: Uint32Array, nParts: number, start: number, max: number, info: Uint32Array, waitUs: number, spinUs: number, offs?: Uint32Array, hold = false, holder = 0): string | null {
    checkPop(max, info, offs, hold);
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
      const s = popFirst(lane.rings, parts, nParts, start, max, info, offs, hold, holder);
      if (s !== null) return s;
      if (this.mustNotWait(lane, waitUs)) return null;
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

  /** A pop that found nothing returns at once: it was not to wait, or the core is closed or the lane freed. */
  private mustNotWait(lane: JsLane, waitUs: number): boolean {
    return waitUs === 0 || this.closed || Atomics.load(lane.ctl, FREED) === 1;
  }

  ack(laneId: number, partition: number, first: number, count: number): void {
    const ring = this.ring(laneId, partition);
    if (count > ring.cap) throw new RangeError('ack count exceeds the capacity');
    ring.ack(first | 0, count);
  }

  takeHeld(laneId: number, partition: number, holder = 0): [string, Uint32Array] | null {
    return this.ring(laneId, partition).takeHeld(holder >>> 0);
  }

  stats(laneId: number, partition: number): number[] {
    const ring = this.ring(laneId, partition);
    const c = ring.counters;
    return [c[0]!, Number(Atomics.load(ring.counters64, 1)), c[2]!, c[3]!, c[4]!, ring.size(), ring.held()];
  }

  /** Wakes every consumer of the lane (close, rebalance). */
  notify(laneId: number): void {
    const lane = this.find(laneId);
    if (lane) this.wakeAll(lane);
  }

  private wakeAll(lane: JsLane): void {
    for (const r of lane.rings) r.wake();
    notifyLane(lane.ctl);
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

/**
 * Pops from the first of `parts` (taken in turn from `start`) that has records: their text, or null when
 * none has any. `info[1]` is the partition popped.
 */
function popFirst(rings: JsRing[], parts: Uint32Array, nParts: number, start: number, max: number, info: Uint32Array, offs: Uint32Array | undefined, hold: boolean, holder: number): string | null {
  for (let i = 0; i < nParts; i++) {
    const p = parts[(start + i) % nParts]!;
    const ring = rings[p];
    if (!ring) throw new RangeError('bad partition');
    const s = popRing(ring, max || 1, info, offs, hold, holder >>> 0);
    if (s !== null) {
      info[1] = p;
      return s;
    }
  }
  return null;
}

/** Throws unless `offs` (when given) holds max + 1 entries and `info` what pop writes. */
function checkPop(max: number, info: Uint32Array, offs: Uint32Array | undefined, hold: boolean): void {
  if (offs && offs.length < Math.max(1, max) + 1) throw new RangeError('pop: offs (max + 1 entries) must hold at least ' + (Math.max(1, max) + 1) + ' entries');
  if (info.length < (hold ? 3 : 2)) throw new RangeError(`pop: info must hold at least ${hold ? 3 : 2} entries`);
}
