/**
 * The delivery engine every transport's consumer runs on. It owns the rules of delivering: `concurrency`
 * handler slots, the delivery slice of an event-loop turn (a backlog yields to timers and I/O), the run of a
 * handler (synchronous handlers cost no promise), the verdict on a failure (another attempt after its backoff,
 * or a dead letter: delivery-rules.ts), the drain on close, and what becomes of a handler still running when
 * the drain runs out (on the last attempt allowed it is dead-lettered, otherwise handed back).
 *
 * A transport supplies the rest, as the abstract members of a subclass: where the next event comes from
 * (`startNext`, which picks it, keeps per-key order by the partitions it serves and calls `startHandler`), and what a
 * verdict does on its wire (`succeeded`: ack; `retry`: a timer, a retry stream; `dead`: a dead-letter queue;
 * `handBack`: back to the group). `T` is the transport's record of what it delivered (a held batch, a stream
 * entry...), and `index` the event's place in it; the engine only passes them back.
 *
 * Contract: `running` counts handlers started and not ended; every `startHandler` ends exactly once, through
 * `succeeded`, `retry` or `dead` (after `ended`), or through `handBack`/`dead` when a drain gives it up. An
 * outcome that arrives after the run was given up is ignored.
 */
import { DeliverySlice, NextTurn } from './next-turn.js';
import { afterFailure, deadLetterOf, isLastAttempt, outlivedDrain, type DeliveryRules, type FailureVerdict } from './delivery-rules.js';
import type { EventEnvelope } from './envelope.js';
import type { DeadLetter, DeliveryContext, DeliveryHandler } from './transport.js';
import type { DeliveryObserver } from './failure-log.js';
import { TimeoutError } from './errors.js';
import type { SubscriptionProgress } from './health.js';
import { performance } from 'node:perf_hooks';
import { ackChannel, deadLetterChannel, outcomesWatched, processChannel, retryChannel, traced, type OutcomeMessage, type ProcessMessage } from './diagnostics.js';

/** The verdict of another attempt. */
export type RetryVerdict = Extract<FailureVerdict, { retry: true }>;

/** What the engine reads of a subscription (a `SubscriptionSpec` is one). */
export interface EngineSpec extends DeliveryRules {
  readonly group: string;
  /** Handlers running at once. */
  readonly concurrency: number;
  /** Told of each failure and its verdict (`SubscriptionSpec.observer`: the bus logs them). */
  readonly observer?: DeliveryObserver | undefined;
  /** The transport's type, told to the `eventlane:process` channel (`SubscriptionSpec.transport`). */
  readonly transport?: string | undefined;
}

/** A handler that returned a promise, tracked until it settles or a drain gives it up. */
export class Running<T> {
  givenUp = false;
  constructor(
    readonly item: T,
    readonly index: number,
    readonly env: EventEnvelope,
    readonly ctx: DeliveryContext,
    /** The transport's own number for this run (`startHandler`'s `tag`), given back to `ended`. */
    readonly tag: number,
    /** `performance.now()` as the run started, when an outcome channel had a subscriber then; else -1. */
    readonly startedAt: number,
  ) {}
}

export abstract class DeliveryEngine<T> {
  /** Handlers started and not ended. */
  protected running = 0;
  /** Set by `stopTaking`: `pump` starts nothing more. */
  protected stopping = false;
  private readonly runs = new Set<Running<T>>();
  private idleWaiters: (() => void)[] = [];
  private pumping = false;
  private again = false;
  /** When the current pump pass started its first handler (0: none yet); one clock read per pass. */
  private passAt = 0;
  /**
   * Within a pump pass, `performance.now()` as the last synchronous run ended: the next run's start, so timing
   * back-to-back runs reads the clock once per run (the engine's own work between them counts to the next).
   * -1 outside a pass.
   */
  private passClock = -1;
  /** When a handler last started (ms since the epoch, to the pass; 0: never). */
  private lastStartAt = 0;
  private readonly nextTurn = new NextTurn(() => this.pump());

  constructor(
    protected readonly spec: EngineSpec,
    protected readonly handler: DeliveryHandler,
    /** The turn's slice; engines that deliver in one turn together (members of a group) share one. */
    private readonly slice: DeliverySlice = new DeliverySlice(),
  ) {}

  /**
   * Starts the next event that may start now by calling `startHandler` once, and returns true; false when there is
   * none (nothing queued, or what is next must wait). Called while a slot is free.
   */
  protected abstract startNext(): boolean;
  /** The handler of `env`, event `index` of `item`, resolved. */
  protected abstract succeeded(item: T, index: number, env: EventEnvelope): void;
  /** Delivery `ctx` of `env` failed with `err`, and the event gets another attempt: `next.attempt` after `next.delayMs`. */
  protected abstract retry(item: T, index: number, env: EventEnvelope, ctx: DeliveryContext, next: RetryVerdict, err: unknown): void;
  /** The event is done with: its last attempt failed, its error is not retryable, or it outlived a drain on its last attempt. */
  protected abstract dead(item: T, index: number, env: EventEnvelope, dl: DeadLetter): void;
  /**
   * A drain gave up the handler of delivery `ctx` (still running) before its last attempt: the event goes back
   * for another delivery, as attempt `ctx.attempt + 1`.
   */
  protected abstract handBack(item: T, index: number, env: EventEnvelope, ctx: DeliveryContext): void;

  /** Whether a handler may start beyond a free slot (a transport's own gate). */
  protected mayStart(): boolean {
    return true;
  }

  /** A handler ended (any outcome, before its verdict's hook); `tag` is the one `startHandler` was given. */
  protected ended(_item: T, _tag: number): void {}

  /** An asynchronous handler settled: delivery may go on. The main-thread default pumps at once. */
  protected resume(): void {
    this.pump();
  }

  /** Called after each pump and each outcome: idle waiters are woken here. */
  protected afterPump(): void {}

  /** Whether a slot is free and the transport's gate lets another handler start. */
  protected get canStart(): boolean {
    return this.running < this.spec.concurrency && !this.stopping && this.mayStart();
  }

  /**
   * Starts events while slots are free, within this turn's delivery slice (the rest after an event-loop turn).
   * Re-entrant calls (a synchronous handler settling, a hook pumping) run again once the current pass ends.
   */
  pump(): void {
    if (this.pumping) {
      this.again = true;
      return;
    }
    if (!this.slice.begin()) {
      this.nextTurn.request();
      return;
    }
    this.pumping = true;
    try {
      do {
        this.again = false;
        if (!this.startAll()) break;
      } while (this.again);
    } finally {
      this.pumping = false;
      this.passAt = 0;
      this.passClock = -1;
    }
    this.afterPump();
  }

  /** One pass of `pump`; false when the slice ran out (the rest is requested for the next turn). */
  private startAll(): boolean {
    while (this.canStart) {
      if (!this.startNext()) return true;
      if (this.slice.over()) {
        this.nextTurn.request();
        return false;
      }
    }
    return true;
  }

  /** Pumps after an event-loop turn (a new member's first delivery, so no handler runs inside subscribe()). */
  pumpLater(): void {
    this.nextTurn.request();
  }

  /**
   * Runs the handler of `env` (event `index` of `item`), counted in `running` until it ends, and applies the
   * verdict on its outcome. `tag` is the transport's own number for the run, given back to `ended`.
   */
  protected startHandler(item: T, index: number, env: EventEnvelope, ctx: DeliveryContext, tag = -1): void {
    this.running++;
    if (this.passAt === 0) this.passAt = this.lastStartAt = Date.now();
    // Timed for the outcome channels' `durationMs`, only while someone subscribes to them.
    const t0 = !outcomesWatched() ? -1 : this.passClock >= 0 ? this.passClock : performance.now();
    // The `eventlane:process` tracing channel's message, when anyone subscribes (src/diagnostics.ts).
    const msg: ProcessMessage | undefined = traced(processChannel) ? { event: env, context: ctx, transport: this.spec.transport, within: undefined } : undefined;
    let r: void | Promise<void>;
    try {
      r = msg === undefined ? this.handler(env, ctx) : processChannel.traceSync(runWithin, msg, undefined, this.handler, msg);
    } catch (err) {
      this.end(item, index, env, ctx, tag, t0, err, true);
      return;
    }
    if (r !== undefined && r !== null && typeof (r as Promise<void>).then === 'function') {
      const run = new Running(item, index, env, ctx, tag, t0);
      this.runs.add(run);
      (r as Promise<void>).then(
        () => this.settle(run, undefined, false, msg),
        (err: unknown) => this.settle(run, err, true, msg),
      );
    } else {
      this.end(item, index, env, ctx, tag, t0, undefined, false);
    }
  }

  private settle(run: Running<T>, err: unknown, failed: boolean, msg: ProcessMessage | undefined): void {
    if (msg !== undefined) {
      if (failed) {
        msg.error = err;
        processChannel.error.publish(msg);
      }
      processChannel.asyncStart.publish(msg);
    }
    if (!run.givenUp) {
      this.runs.delete(run);
      this.end(run.item, run.index, run.env, run.ctx, run.tag, run.startedAt, err, failed);
      this.resume();
    }
    if (msg !== undefined) processChannel.asyncEnd.publish(msg);
  }

  /** A run ended: its slot is free, and its outcome's verdict applies. `t0`: the run's `Running.startedAt`. */
  private end(item: T, index: number, env: EventEnvelope, ctx: DeliveryContext, tag: number, t0: number, err: unknown, failed: boolean): void {
    this.running--;
    this.ended(item, tag);
    let durationMs: number | undefined;
    if (t0 >= 0) {
      const now = performance.now();
      durationMs = now - t0;
      if (this.pumping) this.passClock = now;
    }
    if (failed) {
      this.verdict(item, index, env, ctx, err, durationMs);
    } else {
      if (ackChannel.hasSubscribers) ackChannel.publish({ event: env, context: ctx, durationMs } satisfies OutcomeMessage);
      this.succeeded(item, index, env);
    }
    this.wakeIfIdle();
  }

  /**
   * The verdict on delivery `ctx` of `env` failing with `err` (delivery-rules.ts), carried out by `retry` or
   * `dead`. For a transport's own runs too (a worker thread's serial loop awaits its handler itself).
   * `durationMs`: the run's, for the outcome channels (`OutcomeMessage.durationMs`).
   */
  protected verdict(item: T, index: number, env: EventEnvelope, ctx: DeliveryContext, err: unknown, durationMs?: number): void {
    const v = afterFailure(this.spec, ctx.attempt, err);
    this.report(env, ctx, err, v, durationMs);
    if (v.retry) this.retry(item, index, env, ctx, v, err);
    else this.dead(item, index, env, deadLetterOf(env, this.spec.group, ctx.partition, ctx.attempt, v.error));
  }

  /**
   * A handler the transport runs itself (awaited in place, as a worker thread's serial loop does) is counted
   * like `startHandler`'s: `ownRunStarted` before it, `ownRunEnded` after it, its failure through `verdict`.
   */
  protected ownRunStarted(): void {
    this.running++;
  }

  protected ownRunEnded(): void {
    this.running--;
    this.wakeIfIdle();
  }

  /**
   * For a health probe: when a handler last started, and `stalled` when every slot is held and none started for
   * `stallMs` (handlers outliving their work, or waiting on something that does not answer).
   */
  progress(stallMs: number, now = Date.now()): SubscriptionProgress {
    const last = this.lastStartAt === 0 ? undefined : this.lastStartAt;
    const stalled = this.running >= this.spec.concurrency && now - this.lastStartAt >= stallMs;
    return { state: this.stopping ? 'closed' : stalled ? 'stalled' : 'running', lastDeliveryAt: last };
  }

  /** Starts nothing more (what is queued stays with the transport). */
  stopTaking(): void {
    this.stopping = true;
  }

  /** Resolves once no handler runs, or after `drainMs`; true when handlers still ran then. */
  async drain(drainMs: number): Promise<boolean> {
    if (this.running === 0) return false;
    let timer: NodeJS.Timeout | undefined;
    const idle = new Promise<void>((resolve) => this.idleWaiters.push(resolve));
    await Promise.race([idle, new Promise<void>((resolve) => (timer = setTimeout(resolve, drainMs)))]);
    clearTimeout(timer);
    return this.running > 0;
  }

  /**
   * After a drain ran out: gives up the handlers still running, in the order they started. Each delivery
   * counts: one on the last attempt allowed is dead-lettered (`dead`), the others go back (`handBack`) with
   * their next attempt. Their later outcomes are ignored. Returns how many were given up.
   */
  giveUpRunning(drainMs: number): number {
    const runs = [...this.runs];
    this.runs.clear();
    for (const run of runs) {
      run.givenUp = true;
      this.running--;
      this.ended(run.item, run.tag);
      const { env, ctx } = run;
      const last = isLastAttempt(this.spec, ctx.attempt);
      const dl = last ? outlivedDrain(env, this.spec.group, ctx.partition, ctx.attempt, drainMs) : undefined;
      const err = new TimeoutError(`The handler was still running when its subscription closed (drainTimeoutMs ${drainMs}).`);
      const durationMs = run.startedAt < 0 ? undefined : performance.now() - run.startedAt;
      this.report(env, ctx, err, dl !== undefined ? { retry: false, error: dl.error } : { retry: true, attempt: ctx.attempt + 1, delayMs: 0 }, durationMs);
      if (dl !== undefined) this.dead(run.item, run.index, env, dl);
      else this.handBack(run.item, run.index, env, ctx);
    }
    return runs.length;
  }

  /** A failure and its verdict, to the bus's observer and the `eventlane:retry` / `eventlane:dead-letter` channels. */
  private report(env: EventEnvelope, ctx: DeliveryContext, err: unknown, v: FailureVerdict, durationMs: number | undefined): void {
    this.spec.observer?.failed(env, ctx, err, v);
    if (v.retry) {
      if (retryChannel.hasSubscribers) retryChannel.publish({ event: env, context: ctx, nextAttempt: v.attempt, delayMs: v.delayMs, error: err, durationMs } satisfies OutcomeMessage);
    } else if (deadLetterChannel.hasSubscribers) {
      deadLetterChannel.publish({ event: env, context: ctx, reason: v.error, error: err, durationMs } satisfies OutcomeMessage);
    }
  }

  private wakeIfIdle(): void {
    if (this.running !== 0 || this.idleWaiters.length === 0) return;
    const w = this.idleWaiters;
    this.idleWaiters = [];
    for (const f of w) f();
  }
}

/** A traced handler run: inside the `within` the channel's `start` subscriber set, if any. */
function runWithin(handler: DeliveryHandler, msg: ProcessMessage): void | Promise<void> {
  return msg.within === undefined ? handler(msg.event, msg.context) : msg.within(() => handler(msg.event, msg.context));
}
