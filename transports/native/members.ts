/**
 * The members of a native consumer group and their consumer threads. A member owns a share of the group's
 * partitions: a main-thread member delivers them through its own MainThreadConsumer, a worker member through
 * a set of consumer threads. A consumer thread's life is one state (`ThreadState`) moved only by `end()`
 * and `finish()`; what the group knows of the thread (the partitions it ever owned, the events it parked
 * with us, the shared cells it publishes) lives here with it.
 */
import type { SubscriptionProgress } from '../../src/health.js';
import type { Worker } from 'node:worker_threads';
import type { SubscriptionSpec } from '../../src/transport.js';
import type { Pending } from './consumer.js';
import type { MainThreadConsumer } from './main-consumer.js';

export class MainMember {
  readonly kind = 'main';
  parts: number[] = [];
  constructor(
    readonly spec: SubscriptionSpec,
    readonly consumer: MainThreadConsumer,
  ) {}
}

/**
 * A consumer thread's life. `serving`: started and consuming for its member (or loading its handler module);
 * `ending`: ended by us (`end()`: transport close, a subscribe cut short), so its exit is not a death, neither
 * logged as one nor replaced; `finished`: stopped, having handed back what it held (or that was taken back),
 * and nothing more comes from it. Only `end()` and `finish()` move it, and `finished` is final.
 */
export type ThreadState = 'serving' | 'ending' | 'finished';

export class ConsumerThread {
  state: ThreadState = 'serving';
  /** It loaded its handler module and consumes (until it finishes). */
  ready = false;
  parts: number[] = [];
  /** The mark on the records it holds in the rings (WorkerLinks.holder): what a death takes back. */
  readonly holder: number;
  /** Every partition it was given (it may still hold records of one it no longer owns). */
  readonly owned = new Set<number>();
  /** Events it holds outside the ring (waiting for a retry, or handed over), by id, until it finishes them. */
  readonly parked = new Map<string, Pending>();
  /** The member it serves (set once the member exists). */
  member: WorkerMember | undefined;
  /** Settles with what it handed back once it is `finished`. */
  readonly stopped: Promise<Pending[]>;
  private resolveStopped!: (left: Pending[]) => void;
  constructor(
    readonly worker: Worker,
    readonly stop: Int32Array,
    /** Events the thread holds, as it last published them. */
    readonly held: Int32Array,
    /** The events whose handlers it runs (WorkerLinks.handling, in-flight.ts). */
    readonly inFlight: Int32Array,
    /** The partitions it counts itself waiting on, while it does (see WorkerLinks.waitingMine). */
    readonly mine: Int32Array,
    holder: number,
  ) {
    this.holder = holder;
    this.stopped = new Promise((resolve) => (this.resolveStopped = resolve));
  }

  /** Not `finished`: it may still pop, hold or hand back events. */
  get alive(): boolean {
    return this.state !== 'finished';
  }

  /** Ends the thread on purpose (transport close, a subscribe cut short); what it held is still taken back as it exits. */
  end(): Promise<number> {
    if (this.state === 'serving') this.state = 'ending';
    return this.worker.terminate();
  }

  /** It stopped: `left` is what it handed back (settles `stopped`). */
  finish(left: Pending[]): void {
    this.state = 'finished';
    this.parked.clear();
    this.resolveStopped(left);
  }

  /**
   * Takes the thread off the topic's counters of waiting consumers (`waiting`): one that ended while counted
   * as waiting (terminated inside a blocking pop) would otherwise have the bus send every publish() at once
   * to nobody.
   */
  unwait(waiting: Int32Array): void {
    const n = Atomics.exchange(this.mine, 0, 0);
    for (let k = 1; k <= n; k++) Atomics.sub(waiting, this.mine[k]!, 1);
  }
}

export class WorkerMember {
  readonly kind = 'workers';
  parts: number[] = [];
  /** Times of recent thread restarts (crash-loop guard). */
  readonly restarts: number[] = [];
  constructor(
    readonly spec: SubscriptionSpec,
    readonly threads: ConsumerThread[],
    readonly handlerModule: string,
    readonly userData: unknown,
    /** Subscribe option `cpus`: thread k runs on `cpus[k % cpus.length]`. */
    readonly cpus: readonly number[] | undefined,
  ) {}

  /**
   * Its handlers run in threads the main thread cannot see: no last delivery, and `reconnecting` while a thread
   * that died is being replaced (until the replacement is ready).
   */
  progress(): SubscriptionProgress {
    return { state: this.threads.every((t) => t.alive && t.ready) ? 'running' : 'reconnecting', lastDeliveryAt: undefined };
  }
}

export type Member = MainMember | WorkerMember;

/** The CPU of a member's k-th thread, if it pins its threads. */
export function cpuOf(cpus: readonly number[] | undefined, k: number): number | undefined {
  return cpus === undefined ? undefined : cpus[k % cpus.length];
}
