/**
 * Payloads, generated before any timed window. Objects are distinct per event; the filler string that
 * pads an event to its size is shared (so memory figures show the library, not the test data).
 */
import { z } from 'zod';
import { defineEvents } from '../../src/index.js';
import type { Measured } from './types.js';

export const benchEvents = defineEvents({
  'bench.sized': z.object({ id: z.number().int(), body: z.string() }),
  'bench.trade': z.object({ id: z.number().int(), sym: z.string(), px: z.number(), qty: z.number().int() }),
  // The trading message plus its send time `t` (ns on the shared monotonic clock, after a run epoch), for
  // latency measured in worker threads (native).
  'bench.tick': z.object({ id: z.number().int(), sym: z.string(), px: z.number(), qty: z.number().int(), t: z.number() }),
});

export type SizedPayload = { id: number; body: string };
export type TradePayload = { id: number; sym: string; px: number; qty: number };
export type TickPayload = TradePayload & { t: number };

/**
 * `count` payloads whose JSON encoding is `size` bytes (exact for the largest id; shorter ids a few bytes
 * less). Throws when `size` is below the JSON of the largest id without filler: that payload would be larger
 * than `size` (the CLI refuses such sizes up front, see MIN_MESSAGE_SIZE).
 */
export function sizedPayloads(count: number, size: number): SizedPayload[] {
  const overhead = JSON.stringify({ id: Math.max(0, count - 1), body: '' }).length;
  if (size < overhead) throw new Error(`message size ${size} B is below the ${overhead} B of the payload {"id":${Math.max(0, count - 1)},"body":""} without filler`);
  const body = 'x'.repeat(Math.max(0, size - overhead));
  const out: SizedPayload[] = new Array(count);
  for (let i = 0; i < count; i++) out[i] = { id: i, body };
  return out;
}

/** Seed 001's 40-byte trading message: {"id":N,"sym":"AAPL","px":150.25,"qty":100}. */
export function tradePayloads(count: number): TradePayload[] {
  const out: TradePayload[] = new Array(count);
  for (let i = 0; i < count; i++) out[i] = { id: i, sym: 'AAPL', px: 150.25, qty: 100 };
  return out;
}

/** Trading messages with a send-time field `t` (set at send time; 0 until then). */
export function tickPayloads(count: number, from = 0): TickPayload[] {
  const out: TickPayload[] = new Array(count);
  for (let i = 0; i < count; i++) out[i] = { id: from + i, sym: 'AAPL', px: 150.25, qty: 100, t: 0 };
  return out;
}

/** JSON strings of the payloads (for the hand-written baselines, encoded outside their timed window only where the library gets the same). */
export function encodeAll(payloads: readonly object[]): string[] {
  return payloads.map((p) => JSON.stringify(p));
}

/** Counts deliveries by payload id: received, distinct, duplicates. */
export class DeliveryTracker {
  private readonly seen: Uint8Array;
  received = 0;
  unique = 0;
  /** `ids`: payload ids 0 .. ids - 1 are tracked (subclasses that count differently pass 0). */
  constructor(
    readonly expected: number,
    ids = expected,
  ) {
    this.seen = new Uint8Array(ids);
  }
  mark(id: number): void {
    this.received++;
    if (id >= 0 && id < this.expected && this.seen[id] === 0) {
      this.seen[id] = 1;
      this.unique++;
    }
  }
  get complete(): boolean {
    return this.unique >= this.expected;
  }
  /** Resolves when every event arrived, or after `timeoutMs` of no progress. */
  /** The iteration's figures as counted here: events = distinct payload ids seen in the handler. */
  measured(sent: number, more: Partial<Measured> = {}): Measured {
    return { events: this.unique, sent, received: this.received, unique: this.unique, verifiedBy: 'payload ids counted in the handler', ...more };
  }

  async waitAll(timeoutMs = 10_000): Promise<void> {
    let last = -1;
    let idleSince = performance.now();
    while (!this.complete) {
      if (this.received !== last) {
        last = this.received;
        idleSince = performance.now();
      } else if (performance.now() - idleSince > timeoutMs) return;
      await new Promise((r) => setTimeout(r, 1));
    }
  }
}

/**
 * DeliveryTracker for a pool of payloads published over and over (extreme-batching): `times[id]` copies
 * of payload id `id` were sent. `unique` counts deliveries that match a copy not yet matched, so lost =
 * expected - unique and duplicated = received - unique, as for distinct ids. A lost copy and a duplicated
 * copy of the same id cancel out: the count is exact per id, not per copy.
 */
export class RepeatedDeliveryTracker extends DeliveryTracker {
  private readonly got: Uint32Array;
  constructor(private readonly times: Uint32Array) {
    super(
      times.reduce((a, b) => a + b, 0),
      0,
    );
    this.got = new Uint32Array(times.length);
  }
  override mark(id: number): void {
    this.received++;
    if (id >= 0 && id < this.times.length && this.got[id]!++ < this.times[id]!) this.unique++;
  }
}

/**
 * Waits until `done()` reaches `target` (worker threads count deliveries in shared memory), or until
 * `progress()` has not moved for `idleMs` (then the caller reports what arrived). Polls every 1 ms.
 */
export async function waitForCounter(done: () => number, progress: () => number, target: number, idleMs: number): Promise<void> {
  let last = -1;
  let idle = performance.now();
  while (done() < target) {
    const p = progress();
    if (p !== last) {
      last = p;
      idle = performance.now();
    } else if (performance.now() - idle > idleMs) return;
    await new Promise((res) => setTimeout(res, 1));
  }
}
