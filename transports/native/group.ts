/**
 * One consumer group of the native transport: a lane of partition rings in the core, members that own
 * partitions (a main-thread handler, or a set of worker threads), events handed back by members that left,
 * and the group's dead letters. The group's life is one state (group-state.ts), moved by `on()` alone; its
 * members and threads are members.ts's, starting and listening to threads thread-start.ts's and
 * thread-watch.ts's, what a thread's death costs thread-deaths.ts's, and sharing partitions rebalance.ts's.
 */
import { errorOf } from './worker-failure.js';
import { ClosedError, describeError } from '../../src/errors.js';
import type { Logger } from '../../src/logger.js';
import type { DeadLetter, DeliveryHandler, SubscriptionSpec, TransportSubscription } from '../../src/transport.js';
import type { PartitionCore } from '../../native/js/core-api.js';
import { toRingStats, type RingStats } from '../../native/loader.js';
import type { ConsumerSettings, Pending } from './consumer.js';
import { MainThreadConsumer } from './main-consumer.js';
import { jsonReader, type ReaderPlan } from '../../src/json-reader.js';
import { detached, toPlainEnvelope } from './record-decode.js';
import { nextState, type GroupEvent, type GroupState } from './group-state.js';
import { ConsumerThread, cpuOf, MainMember, WorkerMember, type Member } from './members.js';
import { Backlog, rebalance } from './rebalance.js';
import { mayRestart, reportDeath, ThreadDeaths } from './thread-deaths.js';
import { nextHolder, startConsumerThread, startFailure, type ThreadLaunch } from './thread-start.js';
import { watchThread, type ThreadEvents } from './thread-watch.js';
import { popBatchFor } from './config.js';

export interface GroupOptions {
  readonly source: string;
  readonly maxDeadLetters: number;
  readonly spinUs: number;
  /** Worker threads keep what they pop in the ring until finished (false under drop-oldest). */
  readonly hold: boolean;
  /** The payload's reader plan (see `src/json-reader.ts`), shipped to worker threads in their settings. */
  readonly reader: ReaderPlan | undefined;
  /** The topic's per-partition count of consumer threads blocked waiting, then of their waits (shared with them; see WorkerLinks.waitingCell). */
  readonly waiting: Int32Array;
  readonly logger: Logger;
}

/** A thread started for a subscription, and its start: settled once it is ready (watchThread). */
interface Started {
  thread: ConsumerThread;
  ready: Promise<void>;
}

/** A worker handler module with no schema while validateOnConsume is on: its events go unchecked. */
const UNCHECKED =
  'validateOnConsume is on, but the handler module exports a plain function: worker threads cannot check its events against the schema. Export defineHandler(events, type, fn) to have them checked, or set validateOnConsume: false';
/** `cpus` without the addon, or on a platform that cannot pin threads: they run unpinned. */
const UNPINNED = 'subscribe option cpus ignored: threads cannot be pinned here (the native addon is not loaded, or this platform has no thread affinity)';

export class NativeGroup {
  readonly deadLetters: DeadLetter[] = [];
  private state: GroupState = 'fresh';
  private members: Member[] = [];
  /** Main-thread consumers of members that are leaving, until what they did not finish is handed back. */
  private readonly leaving = new Set<MainThreadConsumer>();
  /** Events handed back by members that left, by partition, until an owner takes them. */
  private readonly backlog = new Backlog();
  /** joinWorkers calls still loading their module. */
  private joins = 0;
  /**
   * Threads started whose 'exit' has not come: until then a thread may still pop, ack or hold records of
   * the lane (one that stopped consuming, or is being ended, included), and its exit may take them back.
   */
  private running = 0;
  /** Threads started and not yet finished, of current members and of members still leaving. */
  private readonly live = new Set<ConsumerThread>();
  /** The next thread's holder mark (0 is no thread's). */
  private holder = 1;
  /** A pump of the main-thread members is queued (`kick`). */
  private kickScheduled = false;
  /** `cpus` could not be honoured, and the log said so (once per group). */
  /** Warnings said once per group (their messages). */
  private readonly warned = new Set<string>();
  private readonly deaths: ThreadDeaths;
  private readonly launch: ThreadLaunch;
  /** How the group takes what its threads say (thread-watch.ts). */
  private readonly threadEvents: ThreadEvents;

  constructor(
    private readonly core: PartitionCore,
    readonly lane: number,
    readonly type: string,
    readonly name: string,
    private readonly partitions: number,
    private readonly o: GroupOptions,
  ) {
    const read = jsonReader(o.reader);
    this.deaths = new ThreadDeaths({ core, lane, type, group: name, source: o.source, hold: o.hold, read, addDead: this.addDead });
    this.launch = { core, lane, partitions, waiting: o.waiting, spinUs: o.spinUs };
    this.threadEvents = {
      group: name,
      logger: o.logger,
      handBack: (items) => this.backlog.add(items),
      // A worker's dead letters were logged with its failure (`failed`); only kept here.
      deadLetter: this.keepDead,
      failed: (thread, f) => thread.member?.spec.observer?.failed(f.env, f.ctx, errorOf(f.error), f.verdict),
      unpinned: () => this.warnOnce({}, UNPINNED),
      unchecked: (handlerModule) => this.warnOnce({ handler: handlerModule }, UNCHECKED),
      exited: (thread, started) => this.threadExited(thread, started),
    };
  }

  /**
   * The one place the group's state moves (see group-state.ts). Entering `freed` frees the lane: this is the
   * only `freeLane` of it.
   */
  private on(event: GroupEvent): void {
    const next = nextState(this.state, event, this.running === 0 && this.unused);
    if (next === this.state) return;
    this.state = next;
    if (next === 'freed') this.core.freeLane(this.lane);
  }

  /** Taken out of its topic (`remove()`): its rings take nothing more. */
  get removed(): boolean {
    return this.state === 'removed' || this.state === 'freed';
  }

  /** No member, and none joining or leaving. */
  get unused(): boolean {
    return this.members.length === 0 && this.joins === 0 && this.leaving.size === 0;
  }

  /** `unused`, and nobody has ever joined it: nobody has consumed, or ever will, what its rings hold. */
  get abandoned(): boolean {
    return this.state === 'fresh' && this.unused;
  }

  /**
   * Takes the group out of use (its transport took it out of its topic; it is `unused`): its lane is freed
   * now, or, while threads of members that left are still running (finishing what they popped, or being
   * ended), as the last of them exits. The transport no longer names the lane after this (writes waiting for
   * room check `removed` first).
   */
  remove(): void {
    this.on('remove');
  }

  /** Wakes consumer threads waiting in the lane (none once it is freed). */
  private notifyLane(): void {
    if (this.state !== 'freed') this.core.notify(this.lane);
  }

  private settings(spec: SubscriptionSpec, lazy: boolean): ConsumerSettings {
    return {
      type: this.type,
      source: this.o.source,
      group: this.name,
      consumer: spec.consumer,
      concurrency: spec.concurrency,
      maxDeliveries: spec.maxDeliveries,
      backoff: spec.backoff,
      batchSize: popBatchFor(this.core.capacity, spec.concurrency),
      lazy,
      hold: lazy && this.o.hold,
      reader: this.o.reader,
      transport: spec.transport,
    };
  }

  /** A dead letter the bus has not been told of: charged for a thread's death. */
  private addDead = (dl: DeadLetter): void => {
    this.keepDead(dl);
    this.o.logger.warn({ group: this.name, id: dl.id, attempts: dl.attempts, err: dl.error }, 'event dead-lettered');
  };

  /** Keeps a dead letter (a consumer's: its engine told the bus through `spec.observer`). */
  private keepDead = (dl: DeadLetter): void => {
    // Kept for long: its strings must not keep the popped batch's text alive (see `detached`).
    dl = { ...dl, id: detached(dl.id), event: dl.event && detached(toPlainEnvelope(dl.event)) };
    this.deadLetters.push(dl);
    if (this.deadLetters.length > this.o.maxDeadLetters) this.deadLetters.shift();
  };

  /** New events are in the lane: let main-thread members pump (worker threads wake on the core's futex). */
  kick(): void {
    if (this.kickScheduled) return;
    let any = false;
    for (const m of this.members) if (m.kind === 'main') any = true;
    if (!any) return;
    this.kickScheduled = true;
    // A microtask, as the memory transport delivers within write(): no event-loop turn between publish and handler.
    queueMicrotask(() => {
      this.kickScheduled = false;
      for (const m of this.members) if (m.kind === 'main') m.consumer.pump();
    });
  }

  joinMain(spec: SubscriptionSpec, handler: DeliveryHandler): TransportSubscription {
    const consumer = new MainThreadConsumer(this.core, this.lane, { ...this.settings(spec, false), observer: spec.observer }, handler, this.keepDead);
    const member = new MainMember(spec, consumer);
    this.members.push(member);
    this.on('join');
    this.rebalance();
    // First delivery after an event-loop turn: members subscribing together all join before a retained
    // backlog (startFrom '0') is shared out, and no handler runs before subscribe() returns.
    consumer.resumeLater();
    let closing: Promise<void> | undefined;
    return { close: () => (closing ??= this.leaveMain(member)), health: (stallMs) => consumer.progress(stallMs) };
  }

  private async leaveMain(member: MainMember): Promise<void> {
    this.members = this.members.filter((m) => m !== member);
    this.leaving.add(member.consumer); // still counted by unfinished() while its handlers drain
    const left = await member.consumer.stop(member.spec.drainTimeoutMs);
    this.backlog.add(left);
    this.leaving.delete(member.consumer);
    this.rebalance();
    this.on('settle');
  }

  /**
   * Starts `workers` threads running `handlerModule`; rejects with ConfigError when the module fails to load.
   * When `transportClosing` aborts (the transport closes) while the module is still loading, the threads are ended at
   * once and the subscribe rejects with ClosedError: a setup that takes long (or never ends) must neither hold
   * up close() nor leave threads running (and consuming) for a subscription nobody can close.
   */
  async joinWorkers(
    spec: SubscriptionSpec,
    workers: number,
    handlerModule: string,
    userData: unknown,
    cpus: readonly number[] | undefined,
    transportClosing: AbortSignal,
  ): Promise<TransportSubscription> {
    if (transportClosing.aborted) throw new ClosedError('native transport');
    this.joins++;
    try {
      const member = new WorkerMember(spec, [], handlerModule, userData, cpus);
      await this.startWorkers(member, workers, transportClosing);
      return this.admit(member);
    } finally {
      this.joins--;
      this.on('settle');
    }
  }

  /** Starts the member's `workers` threads and waits until all are ready; ends them all if one fails or the transport closes. */
  private async startWorkers(member: WorkerMember, workers: number, transportClosing: AbortSignal): Promise<void> {
    const started: Started[] = [];
    try {
      for (let k = 0; k < workers; k++) started.push(this.startThread(member, cpuOf(member.cpus, k)));
    } catch (err) {
      // new Worker() refused: the ones already started go.
      for (const s of started) s.ready.catch(() => undefined);
      await Promise.all(started.map((s) => s.thread.end()));
      throw startFailure(err);
    }
    const threads = started.map((s) => s.thread);
    const stopAll = (): Promise<unknown> => Promise.all(threads.map((t) => t.end()));
    const onClose = (): void => void stopAll();
    transportClosing.addEventListener('abort', onClose, { once: true });
    try {
      await Promise.all(started.map((s) => s.ready));
      if (transportClosing.aborted) throw new ClosedError('native transport');
    } catch (err) {
      await stopAll();
      throw transportClosing.aborted ? new ClosedError('native transport') : err;
    } finally {
      transportClosing.removeEventListener('abort', onClose);
    }
    member.threads.push(...threads);
  }

  /** Makes a member whose threads are all ready one of the group's, and returns its subscription. */
  private admit(member: WorkerMember): TransportSubscription {
    for (const t of member.threads) t.member = member;
    this.members.push(member);
    this.on('join');
    // A thread that died after it was ready, while the others still loaded (logged then), is replaced now:
    // the subscription would otherwise run on fewer threads than it asked for.
    for (const t of [...member.threads]) if (!t.alive && mayRestart(member, this.o.logger, { group: this.name, died: 'while starting' })) this.respawn(member, t);
    this.rebalance();
    let closing: Promise<void> | undefined;
    return { close: () => (closing ??= this.leaveWorkers(member)), health: () => member.progress() };
  }

  /** Starts a thread for `member` (not yet one of its threads) and begins listening to it. */
  private startThread(member: WorkerMember, cpu: number | undefined): Started {
    const { spec, handlerModule, userData } = member;
    const thread = startConsumerThread(this.launch, this.settings(spec, true), spec, handlerModule, userData, cpu, this.holder);
    this.running++; // until its 'exit' (threadExited)
    this.holder = nextHolder(this.holder);
    this.live.add(thread);
    void thread.stopped.then(() => this.live.delete(thread));
    const ready = watchThread(thread, handlerModule, this.threadEvents);
    ready.then(() => void (thread.ready = true)).catch(() => undefined); // its failure is handled by the caller
    return { thread, ready };
  }

  /**
   * A thread exited (`started`: it had been ready). One that died without handing back (still alive) has
   * what it held taken back, for the others, and a new thread takes its place unless it was being ended.
   */
  private threadExited(thread: ConsumerThread, started: boolean): void {
    try {
      thread.unwait(this.o.waiting);
      if (thread.alive) {
        const ended = thread.state === 'ending';
        const taken = this.deaths.recover(thread, this.state === 'freed');
        this.backlog.add(taken.back);
        thread.finish([]);
        if (started && !ended) {
          const member = thread.member;
          if (reportDeath(member, member !== undefined && this.members.includes(member), taken, this.o.logger, this.name)) this.respawn(member!, thread);
          this.rebalance();
        }
      }
    } finally {
      // Gone for good: it names the lane no more (even when taking its place failed, say a Worker refused
      // by a thread limit). The last one out of a removed group frees the lane.
      this.running--;
      this.on('settle');
    }
  }

  /** Starts the thread that takes `dead`'s place (and CPU) in `member`. */
  private respawn(member: WorkerMember, dead: ConsumerThread): void {
    const k = member.threads.indexOf(dead);
    const { thread, ready } = this.startThread(member, cpuOf(member.cpus, k));
    thread.member = member;
    member.threads[k] = thread;
    ready.then(
      () => this.rebalance(),
      (err: unknown) => {
        thread.finish([]);
        this.o.logger.error({ group: this.name, err: describeError(err) }, 'replacement native consumer thread failed to start');
        // What it was handed went back to the group (see thread-watch.ts): its partitions and those events go
        // to the member's other threads, or to the group's other members when it has none left.
        this.rebalance();
      },
    );
  }

  private warnOnce(fields: Record<string, unknown>, msg: string): void {
    if (this.warned.has(msg)) return;
    this.warned.add(msg);
    this.o.logger.warn({ group: this.name, ...fields }, msg);
  }

  private async leaveWorkers(member: WorkerMember): Promise<void> {
    this.members = this.members.filter((m) => m !== member);
    for (const t of member.threads) Atomics.store(t.stop, 0, 1);
    this.notifyLane();
    const grace = member.spec.drainTimeoutMs + 2000;
    await Promise.all(
      member.threads.map(async (t) => {
        let timer: NodeJS.Timeout | undefined;
        const left = await Promise.race([t.stopped, new Promise<Pending[]>((r) => (timer = setTimeout(() => r([]), grace)))]);
        clearTimeout(timer);
        // Handed back as soon as the thread stopped (in the same turn it stopped being counted as live), so
        // unfinished() never misses them while the thread is terminated.
        this.backlog.add(left);
        // Not `end()`: a thread still running after the grace is reported as it is ended (and what it held taken back).
        await t.worker.terminate();
      }),
    );
    this.rebalance();
  }

  private rebalance(): void {
    rebalance(this.members, this.partitions, this.backlog);
    this.notifyLane();
  }

  /** The exact counters of one of its rings. */
  ringStats(partition: number): RingStats {
    return toRingStats(this.core.stats(this.lane, partition));
  }

  /**
   * `bus.groupCounts()`: `lag` in the rings or handed back, not yet taken; `pending` held by its consumers (a live
   * thread's shared count is an upper bound while it is busy); `again`, counted in `pending` too: records held in
   * the rings, events threads hold out of them (`bus.idle()` adds them: no look misses a record a thread pops).
   */
  counts(): { lag: number; pending: number; again: number } {
    const c = { lag: this.backlog.size, pending: 0, again: 0 };
    for (let p = 0; p < this.partitions; p++) {
      const s = this.ringStats(p);
      c.lag += s.size;
      c.again += s.held;
    }
    for (const m of this.members) if (m.kind === 'main') c.pending += m.consumer.holding();
    for (const consumer of this.leaving) c.pending += consumer.holding();
    for (const t of this.live) c.pending += t.alive ? Math.max(0, Atomics.load(t.held, 0)) : 0;
    for (const t of this.live) c.again += t.alive ? t.parked.size : 0;
    return c;
  }

  /** Stops every worker thread at once (transport close). */
  async terminate(): Promise<void> {
    const all: Promise<number>[] = [];
    for (const m of this.members) if (m.kind === 'workers') for (const t of m.threads) all.push(t.end());
    this.members = [];
    await Promise.all(all);
  }
}
