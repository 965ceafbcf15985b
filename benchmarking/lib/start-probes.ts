/**
 * How the native latency runs learn when each event's handler started in a worker thread. Two probes,
 * each a worker handler module plus the shared memory it writes and the main thread reads:
 *
 * - `OrderProbe` (one partition per worker, the scenarios' 1P/1C and 4P/4C): a no-op handler that only
 *   stores its start time, in delivery order, in its worker's region. Partitions are FIFO and keyless
 *   events go round-robin (the n-th publish of a type to partition n % partitions), so the k-th start of
 *   the worker that owns partition p is the k-th event sent to p. Every 16th event's payload id is read
 *   and checked against that order, and each worker's count must be its partition's exact share.
 * - `IdProbe` (any other layout, where a worker's partitions interleave): the handler parses each payload
 *   and writes its latency into a slot per payload id, counting distinct ids.
 */
import { fileURLToPath } from 'node:url';
import { LatencyRecorder } from './latency.js';
import type { TickPayload } from './payload.js';

const handlerPath = (file: string) => fileURLToPath(new URL(`../workers/${file}`, import.meta.url));

export interface StartProbe {
  readonly handler: string;
  readonly workerData: Record<string, unknown>;
  /** Handler starts so far in this phase (monotonic; for the progress watchdog). */
  received(): number;
  /** Distinct events handled so far in this phase (the wait target). */
  done(): number;
  /**
   * Starts a phase, with nothing in flight: events published from now on are the ones `done` and `collect`
   * count; `published` events of the type were sent on this bus before.
   */
  phase(published: number): void;
  /**
   * After the measured phase: latencies of `sent` (payload ids 0..n-1, their `t` the send time). `received`:
   * every handler start; `unique`: distinct events matched to their publish; `unmatched`: starts that could
   * not be matched to a publish (not counted as delivered, nor as duplicates: see Measured.unmatched).
   */
  collect(sent: readonly TickPayload[]): { rec: LatencyRecorder; received: number; unique: number; unmatched: number; notes: string[]; verifiedBy: string };
}

/** Per-payload-id slots; works with any partition layout. */
export class IdProbe implements StartProbe {
  readonly handler = handlerPath('latency-handler.mjs');
  readonly workerData: Record<string, unknown>;
  private readonly latNs: Float64Array;
  private readonly receivedCell: Int32Array;
  private readonly uniqueCell: Int32Array;
  private readonly seen: Int32Array;

  constructor(total: number, epoch: number) {
    const shared = { latNs: new SharedArrayBuffer(8 * total), received: new SharedArrayBuffer(4), unique: new SharedArrayBuffer(4), seen: new SharedArrayBuffer(4 * total), epoch };
    this.workerData = shared;
    this.latNs = new Float64Array(shared.latNs);
    this.seen = new Int32Array(shared.seen);
    this.receivedCell = new Int32Array(shared.received);
    this.uniqueCell = new Int32Array(shared.unique);
  }

  received(): number {
    return Atomics.load(this.receivedCell, 0);
  }

  done(): number {
    return Atomics.load(this.uniqueCell, 0);
  }

  phase(): void {
    Atomics.store(this.receivedCell, 0, 0);
    Atomics.store(this.uniqueCell, 0, 0);
    this.seen.fill(0);
  }

  collect(sent: readonly TickPayload[]) {
    const rec = new LatencyRecorder();
    for (let i = 0; i < sent.length; i++) if (this.seen[i] === 1) rec.recordNs(this.latNs[i]!);
    return { rec, received: this.received(), unique: this.done(), unmatched: 0, notes: [], verifiedBy: 'payload ids counted by the worker handlers in shared memory' };
  }
}

/** Delivery-order start times; needs exactly one partition per worker. */
export class OrderProbe implements StartProbe {
  readonly handler = handlerPath('start-time-handler.mjs');
  readonly workerData: Record<string, unknown>;
  private readonly times: Float64Array;
  private readonly counts: Int32Array;
  private readonly ids: Int32Array;
  private readonly cap: number;
  /** Each worker's count when the phase began. */
  private readonly from: number[];
  /** Events of the type published before this phase (the round-robin position of its first event). */
  private before = 0;

  /**
   * `partitions` workers, one partition each; `capacity` at least every event the bus will publish of
   * this type (a worker's region must hold all it may receive).
   */
  constructor(
    private readonly partitions: number,
    capacity: number,
    epoch: number,
  ) {
    this.cap = Math.ceil(capacity / 16) * 16;
    const shared = {
      slots: new SharedArrayBuffer(4),
      times: new SharedArrayBuffer(8 * partitions * this.cap),
      counts: new SharedArrayBuffer(4 * 16 * partitions),
      ids: new SharedArrayBuffer(4 * partitions * (this.cap >> 4)),
      cap: this.cap,
      epoch,
    };
    this.workerData = shared;
    this.times = new Float64Array(shared.times);
    this.counts = new Int32Array(shared.counts);
    this.ids = new Int32Array(shared.ids);
    this.from = new Array<number>(partitions).fill(0);
  }

  /** The payload id worker `w` read at its `k`-th event (k a multiple of 16). */
  private sampledId(w: number, k: number): number {
    return this.ids[w * (this.cap >> 4) + (k >> 4)]!;
  }

  private count(w: number): number {
    return Atomics.load(this.counts, w * 16);
  }

  received(): number {
    let sum = 0;
    for (let w = 0; w < this.partitions; w++) sum += this.count(w) - this.from[w]!;
    return sum;
  }

  done(): number {
    return this.received();
  }

  phase(published: number): void {
    for (let w = 0; w < this.partitions; w++) this.from[w] = this.count(w);
    this.before = published;
  }

  /** The first payload id of partition p in this phase, and how many of `n` it gets. */
  private share(p: number, n: number): { first: number; count: number } {
    const first = mod(p - this.before, this.partitions);
    return { first, count: first < n ? Math.ceil((n - first) / this.partitions) : 0 };
  }

  collect(sent: readonly TickPayload[]) {
    const n = sent.length;
    const P = this.partitions;
    const rec = new LatencyRecorder();
    const notes: string[] = [];
    const owner = new Array<number>(P).fill(-1);
    let received = 0;
    let unique = 0;
    let unmatched = 0;
    for (let w = 0; w < P; w++) {
      const from = this.from[w]!;
      const c = this.count(w) - from;
      received += c;
      if (c === 0) continue;
      // The worker's partition, from its first sampled id in this phase.
      const k0 = Math.ceil(from / 16) * 16;
      if (k0 >= from + c) {
        notes.push(`worker ${w}: ${c} events, none sampled; not matched`);
        unmatched += c;
        continue;
      }
      const id0 = this.sampledId(w, k0);
      const p = mod(this.before + id0, P);
      const { first, count } = this.share(p, n);
      let bad =
        owner[p]! >= 0
          ? `partition ${p} also handled by worker ${owner[p]}`
          : c !== count
            ? `${c} events where partition ${p} got ${count}`
            : from + c > this.cap
              ? `${from + c} events in all, more than its region holds (${this.cap})`
              : '';
      owner[p] = w;
      for (let k = k0; !bad && k < from + c; k += 16) {
        const id = this.sampledId(w, k);
        if (id !== first + (k - from) * P) bad = `event ${k - from} of partition ${p} is id ${id}, expected ${first + (k - from) * P}`;
      }
      if (bad) {
        notes.push(`worker ${w}: ${bad}; not matched`);
        unmatched += c;
        continue;
      }
      unique += c;
      const base = w * this.cap + from;
      for (let j = 0; j < c; j++) rec.recordNs(this.times[base + j]! - sent[first + j * P]!.t);
    }
    return {
      rec,
      received,
      unique,
      unmatched,
      notes,
      verifiedBy: "handler starts counted per worker in shared memory, each worker exactly its partition's share, every 16th payload id checked against round-robin order",
    };
  }
}

/** `a` modulo `m`, in [0, m) for negative `a` too. */
function mod(a: number, m: number): number {
  return ((a % m) + m) % m;
}
