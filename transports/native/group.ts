/**
 * One consumer group of the native transport: a lane of partition rings in the core, members that own
 * partitions (a main-thread handler, or a set of worker threads), events handed back by members that left,
 * and the group's dead letters.
 */
import { Worker } from 'node:worker_threads';
import { ClosedError, ConfigError, describeError } from '../../src/errors.js';
import type { Logger } from '../../src/logger.js';
import type { DeadLetter, DeliveryHandler, SubscriptionSpec, TransportSubscription } from '../../src/transport.js';
import type { PartitionCore } from '../../native/js/core-api.js';
import { toRingStats, type RingStats } from '../../native/loader.js';
import type { EventEnvelope } from '../../src/envelope.js';
import { PartitionConsumer, type ConsumerSettings, type Pending } from './consumer.js';
import { jsonReader, type ReaderPlan } from '../../src/json-reader.js';
import { decodeRecords, detached, toPlainEnvelope } from './record.js';
import type { WorkerInit, WorkerMessage } from './worker-main.js';
import { spawnConsumerThread } from './spawn.js';
import { InFlightAtDeath, inFlightBytes } from './in-flight.js';

export interface GroupOptions {
  readonly source: string;
  readonly maxDeadLetters: number;
  readonly batchSize: number;
  readonly spinUs: number;
  /** Worker threads keep what they pop in the ring until finished (false under drop-oldest). */
  readonly hold: boolean;
  /** The payload's reader plan (see `src/json-reader.ts`), shipped to worker threads in their settings. */
  readonly reader: ReaderPlan | undefined;
  /** The topic's per-partition count of consumer threads blocked waiting, then of their waits (shared with them; see PartitionConsumer.waitingCell). */
  readonly waiting: Int32Array;
  readonly logger: Logger;
}

/** Longest a worker waits inside the core before looking at its stop flag and messages. */
const WORKER_WAIT_US = 20_000;

class MainMember {
  readonly kind = 'main';
  parts: number[] = [];
  constructor(
    readonly spec: SubscriptionSpec,
    readonly consumer: PartitionConsumer,
  ) {}
}

class ConsumerThread {
  parts: number[] = [];
  /** The mark on the records it holds in the rings (PartitionConsumer.holder): what `recover` takes back. */
  readonly holder: number;
  /** Every partition it was given (it may still hold records of one it no longer owns). */
  readonly owned = new Set<number>();
  /** Events it holds outside the ring (waiting for a retry, or handed over), by id, until it finishes them. */
  readonly parked = new Map<string, Pending>();
  alive = true;
  /** Ended by us (`end()`): its exit is not a death, so it is neither logged as one nor replaced. */
  ending = false;
  /** The member it serves (set once the member exists). */
  member: WorkerMember | undefined;
  stopped: Promise<Pending[]>;
  private resolveStopped!: (left: Pending[]) => void;
  constructor(
    readonly worker: Worker,
    readonly stop: Int32Array,
    /** Events the thread holds, as it last published them. */
    readonly held: Int32Array,
    /** The events whose handlers it runs (PartitionConsumer.handling, in-flight.ts). */
    readonly inFlight: Int32Array,
    /** The partitions it counts itself waiting on, while it does (see PartitionConsumer.waitingMine). */
    readonly mine: Int32Array,
    holder: number,
  ) {
    this.holder = holder;
    this.stopped = new Promise((resolve) => (this.resolveStopped = resolve));
  }
  /** Ends the thread on purpose (transport close, a subscribe cut short); what it held is still taken back as it exits. */
  end(): Promise<number> {
    this.ending = true;
    return this.worker.terminate();
  }
  finish(left: Pending[]): void {
    this.alive = false;
    this.parked.clear();
    this.resolveStopped(left);
  }
}

class WorkerMember {
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
}

/** The CPU of a member's k-th thread, if it pins its threads. */
function cpuOf(cpus: readonly number[] | undefined, k: number): number | undefined {
  return cpus === undefined ? undefined : cpus[k % cpus.length];
}

/** A thread that dies is replaced, at most this many times per minute per member. */
const MAX_RESTARTS_PER_MINUTE = 5;
/** Events whose thread died, remembered to dead-letter one that keeps killing threads. */
const MAX_TRACKED_DEATHS = 10_000;
/** An event taken back from a dead thread, and whether the thread had started its handler. */
interface Taken {
  item: Pending;
  started: boolean;
}

type Member = MainMember | WorkerMember;

export class NativeGroup {
  readonly deadLetters: DeadLetter[] = [];
  private members: Member[] = [];
  /** Events handed back by members that left, by partition, until an owner takes them. */
  private readonly backlog = new Map<number, Pending[]>();
  private kickScheduled = false;
  /** joinWorkers calls still loading their module. */
  private joins = 0;
  /** Taken out of its topic (`remove()`): its rings take nothing more. */
  private gone = false;
  /** Its lane was freed (`remove()`, once nothing uses it): no core call may name it any more. */
  private freed = false;
  /**
   * Threads started whose 'exit' has not come: until then a thread may still pop, ack or hold records of
   * the lane (one that stopped consuming, or is being ended, included), and its exit may take them back.
   */
  private running = 0;

  get removed(): boolean {
    return this.gone;
  }

  /**
   * Takes the group out of use (its transport took it out of its topic; it is `unused`): its lane is freed
   * now, or, while threads of members that left are still running (finishing what they popped, or being
   * ended), as the last of them exits. The transport no longer names the lane after this (writes waiting for
   * room check `removed` first).
   */
  remove(): void {
    this.gone = true;
    this.freeIfUnused();
  }

  private freeIfUnused(): void {
    if (!this.gone || this.freed || this.running > 0 || !this.unused) return;
    this.freed = true;
    this.core.freeLane(this.lane);
  }

  /** Wakes consumer threads waiting in the lane (none once it is freed). */
  private notifyLane(): void {
    if (!this.freed) this.core.notify(this.lane);
  }

  /** No member, and none joining: nobody has ever consumed, or ever will, what its rings hold. */
  /** Someone has joined it (a member was added) at some time: its rings hold events meant for a consumer. */
  everJoined = false;

  get unused(): boolean {
    return this.members.length === 0 && this.joins === 0 && this.leaving.size === 0;
  }

  constructor(
    private readonly core: PartitionCore,
    readonly lane: number,
    readonly type: string,
    readonly name: string,
    private readonly partitions: number,
    private readonly o: GroupOptions,
  ) {
    this.read = jsonReader(o.reader);
  }

  /** Parses the payloads of records taken back from a dead thread. */
  private readonly read;

  private settings(spec: SubscriptionSpec, lazy: boolean): ConsumerSettings {
    return {
      type: this.type,
      source: this.o.source,
      group: this.name,
      consumer: spec.consumer,
      concurrency: spec.concurrency,
      maxDeliveries: spec.maxDeliveries,
      backoff: spec.backoff,
      batchSize: this.o.batchSize,
      lazy,
      hold: lazy && this.o.hold,
      reader: this.o.reader,
    };
  }

  private addDead = (dl: DeadLetter): void => {
    // Kept for long: its strings must not keep the popped batch's text alive (see `detached`).
    dl = { ...dl, id: detached(dl.id), event: dl.event && detached(toPlainEnvelope(dl.event)) };
    this.deadLetters.push(dl);
    if (this.deadLetters.length > this.o.maxDeadLetters) this.deadLetters.shift();
    this.o.logger.warn({ group: this.name, id: dl.id, attempts: dl.attempts, err: dl.error }, 'event dead-lettered');
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
    const consumer = new PartitionConsumer(this.core, this.lane, this.settings(spec, false), handler, this.addDead);
    consumer.mainThread = true;
    const member = new MainMember(spec, consumer);
    this.members.push(member);
    this.everJoined = true;
    this.rebalance();
    // First delivery after an event-loop turn: members subscribing together all join before a retained
    // backlog (startFrom '0') is shared out, and no handler runs before subscribe() returns.
    consumer.resumeLater();
    let closing: Promise<void> | undefined;
    return { close: () => (closing ??= this.leaveMain(member)) };
  }

  private async leaveMain(member: MainMember): Promise<void> {
    this.members = this.members.filter((m) => m !== member);
    this.leaving.add(member.consumer); // still counted by unfinished() while its handlers drain
    const left = await member.consumer.stop(member.spec.drainTimeoutMs);
    this.handBack(left);
    this.leaving.delete(member.consumer);
    this.rebalance();
    this.freeIfUnused();
  }

  /** Main-thread consumers of members that are leaving, until what they did not finish is handed back. */
  private readonly leaving = new Set<PartitionConsumer>();

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
      return await this.startWorkers(spec, workers, handlerModule, userData, cpus, transportClosing);
    } finally {
      this.joins--;
      this.freeIfUnused();
    }
  }

  private async startWorkers(
    spec: SubscriptionSpec,
    workers: number,
    handlerModule: string,
    userData: unknown,
    cpus: readonly number[] | undefined,
    transportClosing: AbortSignal,
  ): Promise<TransportSubscription> {
    const started: { thread: ConsumerThread; ready: Promise<void> }[] = [];
    try {
      for (let k = 0; k < workers; k++) started.push(this.startThread(spec, handlerModule, userData, cpuOf(cpus, k)));
    } catch (err) {
      // new Worker() refused: workerData that cannot be cloned (a function, a class with private state, a
      // MessagePort, which would need a transfer list), or no more threads. The ones already started go.
      for (const s of started) s.ready.catch(() => undefined);
      await Promise.all(started.map((s) => s.thread.end()));
      const code = (err as { code?: string }).code;
      if ((err as Error).name === 'DataCloneError' || code === 'ERR_MISSING_TRANSFERABLE_IN_TRANSFER_LIST') {
        const message = `cannot be passed to a worker thread (structured clone): ${(err as Error).message}`;
        throw new ConfigError(`subscribe options: workerData ${message}`, [{ path: ['workerData'], message }], { cause: err });
      }
      throw err;
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
    const member = new WorkerMember(spec, threads, handlerModule, userData, cpus);
    for (const t of threads) t.member = member;
    this.members.push(member);
    this.everJoined = true;
    // A thread that died after it was ready, while the others still loaded (logged then), is replaced now:
    // the subscription would otherwise run on fewer threads than it asked for.
    for (const t of [...threads]) if (!t.alive && this.mayRestart(member, { died: 'while starting' })) this.respawn(member, t);
    this.rebalance();
    let closing: Promise<void> | undefined;
    return { close: () => (closing ??= this.leaveWorkers(member)) };
  }

  private startThread(spec: SubscriptionSpec, handlerModule: string, userData: unknown, cpu: number | undefined): { thread: ConsumerThread; ready: Promise<void> } {
    const stop = new SharedArrayBuffer(4);
    const held = new SharedArrayBuffer(4);
    const inFlight = new SharedArrayBuffer(inFlightBytes(spec.concurrency));
    const mine = new SharedArrayBuffer(4 * (1 + this.partitions));
    const init: WorkerInit = {
      core: this.core.share(this.lane),
      settings: this.settings(spec, true),
      parts: [],
      handler: handlerModule,
      userData,
      stop,
      held,
      inFlight,
      waiting: this.o.waiting.buffer as SharedArrayBuffer,
      mine,
      holder: this.nextHolder,
      waitUs: WORKER_WAIT_US,
      spinUs: this.o.spinUs,
      drainMs: spec.drainTimeoutMs,
      cpu,
      validateOnConsume: spec.validateOnConsume,
    };
    const thread = new ConsumerThread(spawnConsumerThread(init, handlerModule), new Int32Array(stop), new Int32Array(held), new Int32Array(inFlight), new Int32Array(mine), this.nextHolder);
    this.running++; // until its 'exit' (watch)
    this.nextHolder = this.nextHolder === 0xffffffff ? 1 : this.nextHolder + 1;
    this.live.add(thread);
    void thread.stopped.then(() => this.live.delete(thread));
    return { thread, ready: this.watch(thread, handlerModule) };
  }

  /**
   * A thread died without handing its events back (a crash, `process.exit` in a handler): what it held was
   * taken back (`recover`) and a new thread takes its place, unless the member is gone or the thread keeps
   * dying (more than MAX_RESTARTS_PER_MINUTE).
   */
  private replace(dead: ConsumerThread, taken: { recovered: number; lost: number }): void {
    const member = dead.member;
    const { recovered, lost } = taken;
    const group = this.name;
    const held = (to: string): string => (lost > 0 ? `up to ${lost} event(s) it held are lost (backpressure 'drop-oldest' does not hold them)` : `the ${recovered} event(s) it held go to ${to}`);
    if (member === undefined) {
      // Ready, then dead while the subscription's other threads still load: joinWorkers starts its replacement.
      this.o.logger.error(
        { group, recovered, lost },
        `native consumer thread died while its subscription was starting; ${held("the group's other members")}; replaced once the subscription has started`,
      );
      return;
    }
    if (!this.members.includes(member)) {
      // Its subscription is closing: no new thread, but the death is logged (a handler killing its thread
      // during close() must leave a trace); what it held is taken back all the same.
      this.o.logger.error({ group, recovered, lost }, `native consumer thread died while its subscription was closing; ${held("the group's other members")}; not replaced`);
      return;
    }
    if (!this.mayRestart(member, { recovered, lost })) return;
    this.o.logger.error({ group, recovered, lost }, `native consumer thread died; ${held("the group's other threads")}; starting a new thread`);
    this.respawn(member, dead);
  }

  /** Whether `member` may start another thread (at most MAX_RESTARTS_PER_MINUTE a minute); counts it if so. */
  private mayRestart(member: WorkerMember, fields: Record<string, unknown>): boolean {
    const now = Date.now();
    while (member.restarts.length > 0 && now - member.restarts[0]! > 60_000) member.restarts.shift();
    if (member.restarts.length >= MAX_RESTARTS_PER_MINUTE) {
      this.o.logger.error(
        { group: this.name, ...fields, restarts: member.restarts.length },
        'native consumer thread died again; not restarting it (crash loop); its partitions go to the remaining threads',
      );
      return false;
    }
    member.restarts.push(now);
    return true;
  }

  /** Starts the thread that takes `dead`'s place (and CPU) in `member`. */
  private respawn(member: WorkerMember, dead: ConsumerThread): void {
    const k = member.threads.indexOf(dead);
    const { thread, ready } = this.startThread(member.spec, member.handlerModule, member.userData, cpuOf(member.cpus, k));
    thread.member = member;
    member.threads[k] = thread;
    ready.then(
      () => this.rebalance(),
      (err: unknown) => {
        thread.finish([]);
        this.o.logger.error({ group: this.name, err: describeError(err) }, 'replacement native consumer thread failed to start');
        // What it was handed went back to the group (see watch): its partitions and those events go to the
        // member's other threads, or to the group's other members when it has none left.
        this.rebalance();
      },
    );
  }

  /**
   * Takes back what a dead thread held: the records it popped and had not finished (still in the ring under
   * `hold`) and the events it had parked with us, queued for the group's other threads or its replacement.
   * The death is charged to the events whose handlers the thread had started and not finished (`charge`);
   * what it held and had not started goes back as it was. Without `hold` (drop-oldest) the records it
   * popped are gone, but for a batch it died with between its pop and its ack (see
   * PartitionConsumer.countThenAck), taken back here too: `lost` is its last published count less what was
   * taken back.
   */
  private recover(dead: ConsumerThread): { recovered: number; lost: number } {
    const running = new InFlightAtDeath(dead.inFlight);
    const taken: Taken[] = [];
    for (const it of dead.parked.values()) taken.push({ item: it, started: running.started(it.env.id, it.partition, undefined) });
    if (!this.core.closed && !this.freed) {
      // (A closed core: the transport is closing and stops its threads; nothing to give back to. The lane is
      // never freed here: this thread counts as running until after this.)
      for (const p of dead.owned) {
        // Its records alone: another thread (or a main-thread member) may hold records of a partition this
        // one owned before a rebalance.
        const got = this.core.takeHeld(this.lane, p, dead.holder);
        if (got === null) continue;
        const envs: EventEnvelope[] = [];
        decodeRecords(got[0], got[1], got[1].length - 1, this.type, this.o.source, false, this.read, envs);
        envs.forEach((env, k) => taken.push({ item: { env: toPlainEnvelope(env), attempt: 1, partition: p }, started: running.started(env.id, p, k) }));
      }
    }
    const lost = this.o.hold ? 0 : Math.max(0, Atomics.load(dead.held, 0) - taken.length);
    const back = this.charge(taken, running.count === 1, dead.member?.spec);
    this.handBack(back);
    return { recovered: back.length, lost };
  }

  /**
   * Charges a thread's death to each event it had started (`Taken.started`); returns what goes back to the
   * group. A death is proven against an event when it was the only one running in the thread (`alone`):
   * with concurrency > 1 the events running beside the one that killed the thread are charged too, so an
   * event charged once is delivered again (attempt raised) to run alone, and is dead-lettered with
   * ConsumerThreadDied only once it has been running at `maxDeliveries` deaths, the last of them alone.
   * An event that kills every thread that runs it is therefore dead-lettered, and one that only shared a
   * thread with it is not: after its first death the killer runs alone, so it shares no other.
   */
  private charge(taken: readonly Taken[], alone: boolean, spec: SubscriptionSpec | undefined): Pending[] {
    const back: Pending[] = [];
    for (const { item: it, started } of taken) {
      if (!started) {
        back.push(it);
        continue;
      }
      const deaths = (this.deaths.get(it.env.id) ?? 0) + 1;
      this.deaths.delete(it.env.id);
      if (spec !== undefined && alone && deaths >= spec.maxDeliveries) {
        this.addDead({
          id: it.env.id,
          type: it.env.type,
          group: this.name,
          partition: it.partition,
          attempts: Math.max(it.attempt, deaths),
          error: `ConsumerThreadDied: the consumer thread holding this event died ${deaths} times`,
          event: it.env,
          deadAt: Date.now(),
        });
        continue;
      }
      this.deaths.set(detached(it.env.id), deaths); // kept for long: not a view of the records' text
      back.push({ ...it, attempt: Math.max(it.attempt, 1 + deaths), alone: true });
    }
    while (this.deaths.size > MAX_TRACKED_DEATHS) this.deaths.delete(this.deaths.keys().next().value!);
    return back;
  }

  private warnedUnpinned = false;

  /** `cpus` without the addon, or on a platform that cannot pin threads: they run unpinned (said once per group). */
  private warnedUnchecked = false;

  private warnUnpinned(): void {
    if (this.warnedUnpinned) return;
    this.warnedUnpinned = true;
    this.o.logger.warn({ group: this.name }, 'subscribe option cpus ignored: threads cannot be pinned here (the native addon is not loaded, or this platform has no thread affinity)');
  }

  private warnUnchecked(handlerModule: string): void {
    if (this.warnedUnchecked) return;
    this.warnedUnchecked = true;
    this.o.logger.warn(
      { group: this.name, handler: handlerModule },
      'validateOnConsume is on, but the handler module exports a plain function: worker threads cannot check its events against the schema. Export defineHandler(events, type, fn) to have them checked, or set validateOnConsume: false',
    );
  }

  /** How many threads died on each event (the newest MAX_TRACKED_DEATHS events). */
  private readonly deaths = new Map<string, number>();

  private watch(thread: ConsumerThread, handlerModule: string): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      let started = false;
      thread.worker.on('message', (m: WorkerMessage) => {
        if (m.t === 'ready') {
          started = true;
          if (m.pinned === false) this.warnUnpinned();
          if (m.unchecked === true) this.warnUnchecked(handlerModule);
          resolve();
        } else if (m.t === 'load-error') {
          // A replacement thread may have been handed events already (rebalance runs before it is ready).
          this.handBack([...thread.parked.values()]);
          thread.finish([]);
          if (m.field === 'cpus') reject(new ConfigError(`subscribe options: cpus: ${m.message}`, [{ path: ['cpus'], message: m.message }]));
          else reject(new ConfigError(`Handler module ${handlerModule} failed to load in a worker: ${m.message}${bareHint(handlerModule)}`, [{ path: ['handler'], message: m.message }]));
        } else if (m.t === 'park') {
          thread.parked.set(m.item.env.id, m.item);
        } else if (m.t === 'unpark') {
          thread.parked.delete(m.id);
        } else if (m.t === 'dead') {
          this.addDead(m.dl as DeadLetter);
        } else if (m.t === 'stopped') {
          // Still parked: events it was handed and never took (a 'give' it had not read when it stopped).
          // They go back with what it handed back (messages arrive in order: finished ones were unparked).
          const left = m.left;
          if (thread.parked.size > 0) {
            const back = new Set(left.map((p) => p.env.id));
            for (const it of thread.parked.values()) if (!back.has(it.env.id)) left.push(it);
          }
          thread.finish(left);
        } else if (m.t === 'fatal') {
          this.o.logger.error({ group: this.name, err: m.message }, 'native consumer thread failed');
        }
      });
      thread.worker.on('error', (err) => {
        this.o.logger.error({ group: this.name, err: describeError(err) }, 'native consumer thread crashed');
        if (!started) reject(new ConfigError(`Handler module ${handlerModule} failed in a worker: ${describeError(err)}`, [{ path: ['handler'], message: describeError(err) }]));
      });
      thread.worker.on('exit', () => {
        try {
          this.unwait(thread);
          if (!started) reject(new ConfigError(`Consumer thread for ${handlerModule} exited before it was ready.`, [{ path: ['handler'], message: 'worker exited' }]));
          if (thread.alive) {
            // Died without handing back: what it held goes to the others, and a new thread takes its place.
            const taken = this.recover(thread);
            thread.finish([]);
            if (started && !thread.ending) {
              this.replace(thread, taken);
              this.rebalance();
            }
          }
        } finally {
          // Gone for good: it names the lane no more (even when taking its place failed, say a Worker refused
          // by a thread limit). The last one out of a removed group frees the lane.
          this.running--;
          this.freeIfUnused();
        }
      });
    });
  }

  /**
   * A thread that ended while counted as waiting (terminated inside a blocking pop) is taken off the
   * topic's counters, or the bus would keep sending every publish() at once to nobody.
   */
  private unwait(thread: ConsumerThread): void {
    const n = Atomics.exchange(thread.mine, 0, 0);
    for (let k = 1; k <= n; k++) Atomics.sub(this.o.waiting, thread.mine[k]!, 1);
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
        this.handBack(left);
        // Not `end()`: a thread still running after the grace is reported as it is ended (and what it held taken back).
        await t.worker.terminate();
      }),
    );
    this.rebalance();
  }

  private handBack(items: Pending[]): void {
    for (const it of items) {
      let list = this.backlog.get(it.partition);
      if (!list) this.backlog.set(it.partition, (list = []));
      list.push(it);
    }
  }

  private rebalance(): void {
    // A worker member whose threads all died and were not replaced (crash loop, a replacement that failed to
    // load) owns no partitions: they go to the group's other members.
    const live = this.members.filter((m) => m.kind === 'main' || m.threads.some((t) => t.alive));
    for (const m of live) m.parts = [];
    if (live.length > 0) for (let p = 0; p < this.partitions; p++) live[p % live.length]!.parts.push(p);
    for (const m of live) {
      if (m.kind === 'main') {
        m.consumer.setPartitions(m.parts);
        const give = this.takeBacklog(m.parts);
        if (give.length) m.consumer.give(give);
        m.consumer.resumeLater(); // after the turn: members joining together all get their share first
      } else {
        const threads = m.threads.filter((t) => t.alive);
        threads.forEach((t, i) => {
          t.parts = m.parts.filter((_, k) => k % threads.length === i);
          for (const p of t.parts) t.owned.add(p);
          t.worker.postMessage({ t: 'assign', parts: t.parts });
          const give = this.takeBacklog(t.parts);
          if (give.length) {
            for (const it of give) t.parked.set(it.env.id, it); // not in the ring: kept here until finished
            t.worker.postMessage({ t: 'give', items: give });
          }
        });
      }
    }
    this.notifyLane();
  }

  private takeBacklog(parts: number[]): Pending[] {
    const out: Pending[] = [];
    for (const p of parts) {
      const list = this.backlog.get(p);
      if (list) {
        out.push(...list);
        this.backlog.delete(p);
      }
    }
    return out;
  }

  /** The next thread's holder mark (0 is no thread's). */
  private nextHolder = 1;

  /** Threads started and not yet ended, of current members and of members still leaving. */
  private readonly live = new Set<ConsumerThread>();

  /** The exact counters of one of its rings. */
  ringStats(partition: number): RingStats {
    return toRingStats(this.core.stats(this.lane, partition));
  }

  /**
   * `bus.idle()`: events not finished (an upper bound): in the rings, popped and not acknowledged, handed back
   * and not yet taken, held by main-thread members, and what each live thread says it holds (its shared
   * count, exact whenever it finds nothing to pop, plus what it parked with us). Records a thread pops are
   * counted in its cell before they leave the ring (under 'drop-oldest' too), so no look misses them.
   */
  unfinished(): number {
    let n = 0;
    for (let p = 0; p < this.partitions; p++) {
      const s = this.ringStats(p);
      n += s.size + s.held;
    }
    for (const list of this.backlog.values()) n += list.length;
    for (const m of this.members) if (m.kind === 'main') n += m.consumer.holding();
    for (const c of this.leaving) n += c.holding();
    for (const t of this.live) if (t.alive) n += Math.max(0, Atomics.load(t.held, 0)) + t.parked.size;
    return n;
  }

  /** Stops every worker thread at once (transport close). */
  async terminate(): Promise<void> {
    const all: Promise<number>[] = [];
    for (const m of this.members) if (m.kind === 'workers') for (const t of m.threads) all.push(t.end());
    this.members = [];
    await Promise.all(all);
  }
}

/**
 * A handler given as neither a URL nor an absolute path is a bare specifier: the worker imports it as a
 * package, from eventlane's own folder, so a file name next to the caller ('handler.mjs') is not found.
 */
function bareHint(handlerModule: string): string {
  if (/^[a-z][a-z0-9+.-]*:/i.test(handlerModule)) return '';
  return ` ("${handlerModule}" is neither a URL nor an absolute path, so it was imported as a package name; for a file, pass new URL('./${handlerModule}', import.meta.url) or an absolute path)`;
}
