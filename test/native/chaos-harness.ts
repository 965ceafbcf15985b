/**
 * What the randomized stress ("chaos") tests of the native transport's delivery accounting share (on the addon
 * and on the JS core): the seed (printed; `EVENTLANE_CHAOS_SEED=<n>` repeats one) and the labels derived from
 * it, the per-seq plan bits of the handlers and publish outcomes, the shared-memory tallies of what each group
 * handled, the main-thread twin of the worker handler module, and the publisher bookkeeping.
 */
import { BackpressureError, ClosedError, NonRetryableError, PublishPartialError, TimeoutError } from '../../src/index.js';
import type { DeliveryContext } from '../../src/transport.js';
import { sleep } from '../helpers/wait.js';

export const SEED = process.env['EVENTLANE_CHAOS_SEED'] ? Number(process.env['EVENTLANE_CHAOS_SEED']) >>> 0 : (Math.random() * 2 ** 32) >>> 0;
console.log(`native chaos test: seed ${SEED} (repeat with EVENTLANE_CHAOS_SEED=${SEED})`);

export const derive = (label: string) => [...label].reduce((h, c) => Math.imul(h ^ c.charCodeAt(0), 0x01000193) >>> 0, SEED ^ 0x811c9dc5);

// Plan bits per seq (fixtures/chaos-handler.mjs has the same).
export const FAILS = 3;
export const POISON = 4;
export const FATAL = 8;
export const SYNC = 16;
export const SLOW = 32;
export const EXIT = 64;
export const ASYNC = 128;
export const KILL = 256;

// Publish outcomes per seq.
const PENDING = 1;
export const RESOLVED = 2;
export const CLOSED = 3;
export const TRY_FALSE = 4;
export const REFUSED = 5; // BackpressureError (strategy 'error')
const OTHER = 6;
export const TIMED_OUT = 7; // block: reported not written (a publish's TimeoutError, or named in PublishPartialError.failed)

export const MAX_DELIVERIES = 4;
export const fastRetry = { retry: { backoff: { initialMs: 2, maxMs: 10 } } };
export const sab = (n: number) => new Int32Array(new SharedArrayBuffer(4 * n));

/** Per-seq counters of one group, in shared memory (worker threads write them too). */
export class Tally {
  readonly calls: Int32Array;
  readonly ok: Int32Array;
  readonly okAttempt: Int32Array;
  readonly masks: Int32Array;
  readonly exited: Int32Array;
  readonly flags = sab(2);
  constructor(readonly n: number) {
    this.calls = sab(n);
    this.ok = sab(n);
    this.okAttempt = sab(n);
    this.masks = sab(n);
    this.exited = sab(n);
  }
  workerData(plan: Int32Array, checkOrder = false) {
    const b = (a: Int32Array) => a.buffer as SharedArrayBuffer;
    return { plan: b(plan), calls: b(this.calls), ok: b(this.ok), okAttempt: b(this.okAttempt), masks: b(this.masks), exited: b(this.exited), flags: b(this.flags), checkOrder };
  }
}

/** The main-thread twin of fixtures/chaos-handler.mjs (EXIT and KILL mean nothing here); `order` gets key order violations. */
export function mainHandler(plan: Int32Array, rec: Tally, order?: Map<string, number>) {
  return (e: { data: { seq: number }; key?: string }, ctx: DeliveryContext): void | Promise<void> => {
    const seq = e.data.seq;
    const p = plan[seq]!;
    const attempt = ctx.attempt;
    rec.calls[seq]!++;
    rec.masks[seq]! |= 1 << Math.min(attempt, 30);
    const fail = (p & (POISON | FATAL)) !== 0 || attempt <= (p & FAILS);
    const finish = (): void => {
      if (fail) {
        const msg = `chaos failure of seq ${seq} at attempt ${attempt}${p & POISON ? ' (poison)' : ''}`;
        throw p & FATAL ? new NonRetryableError(msg) : new Error(msg);
      }
      if (order !== undefined && e.key !== undefined) {
        if (seq <= (order.get(e.key) ?? -1)) rec.flags[1]!++;
        order.set(e.key, seq);
      }
      rec.ok[seq]!++;
      rec.okAttempt[seq] = attempt;
    };
    if (p & SLOW) return sleep(1 + (seq % 3)).then(finish);
    if (p & SYNC) return finish();
    if (p & ASYNC || fail) return Promise.resolve().then(finish);
    return finish();
  };
}

/** Seqs of `a` where `pred` holds, the first few, for messages. */
export function some(n: number, pred: (s: number) => boolean, limit = 12): number[] {
  const out: number[] = [];
  for (let s = 0; s < n && out.length < limit; s++) if (pred(s)) out.push(s);
  return out;
}
export const count = (n: number, pred: (s: number) => boolean) => {
  let c = 0;
  for (let s = 0; s < n; s++) if (pred(s)) c++;
  return c;
};

/** Runs publisher loops; `ops` issues one call per step and returns the promise to track (or none). */
export class Publishers {
  readonly outcome: Int8Array;
  readonly errors: unknown[] = [];
  next = 0;
  /** Calls made after the bus's close() resolved: each must fail with ClosedError. */
  afterClose = 0;
  /** Calls made while close() was draining: they may still be accepted (then they count like any other). */
  duringClose = 0;
  afterCloseNotClosed: unknown[] = [];
  private readonly inflight = new Set<Promise<void>>();
  constructor(readonly n: number) {
    this.outcome = new Int8Array(n);
  }
  alloc(k: number): number[] | undefined {
    if (this.next + k > this.n) return undefined;
    const seqs = Array.from({ length: k }, (_, i) => this.next + i);
    this.next += k;
    for (const s of seqs) this.outcome[s] = PENDING;
    return seqs;
  }
  /** Tracks a publish promise; `closedBefore`: the bus had closed when the call was made. */
  track(seqs: number[], p: Promise<void>, closedBefore: boolean): Promise<void> {
    const settle = (o: number, err?: unknown): void => {
      for (const s of seqs) this.outcome[s] = o;
      if (o === OTHER) this.errors.push(err);
      if (closedBefore && o !== CLOSED) this.afterCloseNotClosed.push(err ?? 'resolved');
    };
    const t = p.then(
      () => settle(RESOLVED),
      (err: unknown) => settle(err instanceof ClosedError ? CLOSED : err instanceof BackpressureError ? REFUSED : OTHER, err),
    );
    return this.keep(t);
  }
  /**
   * Tracks a publish or publishMany under block: a seq is RESOLVED when it is reported written (its call
   * resolved, or rejected with a PublishPartialError that does not name it in `failed`), TIMED_OUT when it is
   * reported not written for want of room.
   */
  trackWritten(seqs: number[], p: Promise<void>): Promise<void> {
    const t = p.then(
      () => void seqs.forEach((s) => (this.outcome[s] = RESOLVED)),
      (err: unknown) => {
        const partial = err instanceof PublishPartialError ? err : undefined;
        const failed = partial !== undefined ? new Set(partial.failed) : undefined;
        const timedOut = partial !== undefined ? partial.errors.every((e) => e instanceof TimeoutError) : err instanceof TimeoutError;
        if (!timedOut) this.errors.push(err);
        seqs.forEach((s, i) => (this.outcome[s] = failed !== undefined && !failed.has(i) ? RESOLVED : timedOut ? TIMED_OUT : OTHER));
      },
    );
    return this.keep(t);
  }
  private keep(t: Promise<void>): Promise<void> {
    this.inflight.add(t);
    void t.then(() => this.inflight.delete(t));
    return t;
  }
  /** tryPublish: true/false/throws. */
  tryOne(seq: number, f: () => boolean, closedBefore: boolean): void {
    try {
      this.outcome[seq] = f() ? RESOLVED : TRY_FALSE;
      if (closedBefore) this.afterCloseNotClosed.push('tryPublish returned');
    } catch (err) {
      this.outcome[seq] = err instanceof ClosedError ? CLOSED : err instanceof BackpressureError ? REFUSED : OTHER;
      if (this.outcome[seq] === OTHER) this.errors.push(err);
      if (closedBefore && !(err instanceof ClosedError)) this.afterCloseNotClosed.push(err);
    }
  }
  async throttle(limit: number): Promise<void> {
    while (this.inflight.size >= limit) await Promise.race(this.inflight);
  }
  async settled(timeoutMs: number): Promise<void> {
    const all = Promise.all([...this.inflight]);
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise<'late'>((r) => (timer = setTimeout(() => r('late'), timeoutMs)));
    const r = await Promise.race([all, late]);
    clearTimeout(timer);
    if (r === 'late') throw new Error(`${this.inflight.size} publish calls still pending ${timeoutMs} ms after publishing stopped (seqs ${some(this.n, (s) => this.outcome[s] === PENDING)})`);
  }
  is(s: number, o: number): boolean {
    return this.outcome[s] === o;
  }
}

export const keyOf = (seq: number) => `k${seq % 29}`;
