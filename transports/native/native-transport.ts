/**
 * The `native` transport: events of each (type, consumer group) go through per-partition lock-free rings
 * in the partition core (the N-API addon, or its SharedArrayBuffer fallback). One core call per unit and
 * group. The last `retain` events of each partition are also kept (`History`) so a group created later
 * with `startFrom: '0'` can read them.
 */
import { pathToFileURL } from 'node:url';
import { isAbsolute } from 'node:path';
import { deadLettersOf, SharedBrokers } from '../../src/shared-brokers.js';
import { parseConfig } from '../../src/config.js';
import { BackpressureError, ClosedError, ConfigError, EventlaneError, NativeError, PayloadTooLargeError, TimeoutError } from '../../src/errors.js';
import {
  withWritten,
  writtenCount,
  type DeadLetter,
  type DeliveryHandler,
  type PublishUnit,
  type SubscriptionSpec,
  type Transport,
  type TransportCapabilities,
  type TransportContext,
  type TransportSubscription,
  type WriteResult,
} from '../../src/transport.js';
import { createCore, PushMode, ringBytes, type PartitionCore, type RingStats } from '../../native/loader.js';
import { nativeConfigSchema, nativeSubscribeSchema, type ResolvedNativeConfig } from './config.js';
import { NativeGroup } from './group.js';
import { History, type HistoryMark } from './history.js';
import { copyBatch, encodeEvents, encodeRun, RECORD_HEADER_BYTES, type EncodedBatch } from './record.js';
import { consumerWaitProbe } from './wait-probe.js';

const MODE = {
  block: PushMode.partial,
  'drop-newest': PushMode.dropNewest,
  'drop-oldest': PushMode.evictOldest,
  error: PushMode.allOrNothing,
} as const;

/** A unit of a write still waiting for room, and where the history holds it. */
interface RetainedUnit {
  readonly u: number;
  readonly history: History;
  readonly mark: HistoryMark;
}

class Topic {
  readonly groups = new Map<string, NativeGroup>();
  /** Per partition; empty when nothing is retained. */
  readonly history: History[];
  /** Per partition: consumer threads (of any group) blocked waiting for its events, then their waits (wait-probe.ts). */
  readonly waiting: Int32Array;
  constructor(partitions: number, retain: number) {
    this.history = retain > 0 ? Array.from({ length: partitions }, () => new History(retain)) : [];
    this.waiting = new Int32Array(new SharedArrayBuffer(8 * partitions));
  }
}

/** State shared by every transport opened with the same `name` in this process. */
interface Broker {
  readonly core: PartitionCore;
  readonly topics: Map<string, Topic>;
  /** The service of the bus that opened it: the `source` of records that do not name another. */
  readonly service: string;
  /** Partitions per type: every transport sharing the broker must use as many (its topics and lanes have that many). */
  readonly partitions: number;
}

const brokers = new SharedBrokers<Broker>();

/**
 * Groups (lanes of rings) the addon's core holds at once (native/src/core.h kMaxLanes): a removed group's
 * lane counts until its consumer threads have exited. The JS core has no bound.
 */
const MAX_LANES = 4096;

export class NativeTransport implements Transport {
  readonly type = 'native';
  readonly capabilities: TransportCapabilities;
  /** The core in use: `'native'` (addon) or `'js'` (fallback). */
  readonly implementation: 'native' | 'js';
  readonly core: PartitionCore;
  private readonly broker: Broker;
  private readonly topics: Map<string, Topic>;
  private closed = false;
  /** Aborted by close(): worker subscriptions still loading their handler module give up (ClosedError). */
  private readonly closing = new AbortController();
  /** Worker subscriptions in progress (settled or not): close() waits for their threads to end. */
  private readonly joining = new Set<Promise<void>>();
  private readonly mode: number;
  private readonly waiting = new Set<() => void>();

  constructor(
    readonly config: ResolvedNativeConfig,
    private readonly ctx: TransportContext,
  ) {
    const broker = brokers.acquire(config.name, () => {
      const arena = config.arenaBytes ?? Math.min(2 ** 28, Math.max(65_536, config.capacity * 128));
      let core: PartitionCore;
      try {
        core = createCore(config.capacity, arena, config.implementation, (msg) => {
          ctx.logger.warn({ transport: 'native' }, msg);
          process.emitWarning(msg, { code: 'EVENTLANE_NATIVE_FALLBACK' });
        });
      } catch (err) {
        throw new NativeError(`Cannot create the native partition core: ${(err as Error).message}`, { cause: err });
      }
      return { core, topics: new Map(), service: ctx.service, partitions: config.partitions };
    });
    if (broker.partitions !== config.partitions) {
      brokers.release(config.name);
      const message = `native broker "${config.name}" has ${broker.partitions} partitions per type; every transport sharing it needs the same transport.partitions (got ${config.partitions})`;
      throw new ConfigError(`Invalid transport: ${message}.`, [{ path: ['transport', 'partitions'], message, code: 'custom' }]);
    }
    const limit = Math.floor(broker.core.arenaBytes / 4);
    if (config.maxEventBytes !== undefined && config.maxEventBytes > limit) {
      // Refused, not capped: a capped limit would refuse an event between the two naming maxEventBytes, which allows it.
      brokers.release(config.name);
      const message = `maxEventBytes ${config.maxEventBytes} is above a quarter of the ring's arena (${broker.core.arenaBytes} bytes: at most ${limit}); raise transport.arenaBytes or lower maxEventBytes`;
      throw new ConfigError(`Invalid transport: ${message}.`, [{ path: ['transport', 'maxEventBytes'], message, code: 'custom' }]);
    }
    this.broker = broker;
    this.core = broker.core;
    this.topics = broker.topics;
    this.implementation = this.core.kind;
    this.source = ctx.service === broker.service ? undefined : ctx.service;
    // Runs written as bytes at publish, with room for the record header, when the records are plain (no source).
    const runBytes = this.source === undefined ? { room: RECORD_HEADER_BYTES } : undefined;
    // `block` may write a unit's first events and time out on the rest (blockingPush).
    const partialUnits = config.backpressure === 'block';
    // `error` takes a unit whole or refuses it: a unit larger than an empty ring would always be refused (a
    // burst of publish() calls in one tick, batched into one unit, must not be refused whole by an empty ring).
    const units = config.backpressure === 'error' ? { maxUnitEvents: this.core.capacity, maxUnitBytes: this.core.arenaBytes / 4 } : {};
    this.capabilities = { encoding: 'none', maxInFlight: 64, maxEventBytes: config.maxEventBytes ?? limit, runs: true, runBytes, partialUnits, ...units };
    this.mode = MODE[config.backpressure];
  }

  /** This bus's service when it is not the broker's: written into each record (a bus sharing a named broker). */
  private readonly source: string | undefined;

  async connect(): Promise<void> {
    if (this.closed) throw new ClosedError('native transport');
  }

  partitionsFor(): number {
    return this.config.partitions;
  }

  sendNowProbe(type: string): (partition: number) => boolean {
    return consumerWaitProbe(this.topic(type).waiting);
  }

  /** The type's shared cells of waiting consumer threads (see wait-probe.ts). */
  waitingConsumers(type: string): Int32Array {
    return this.topic(type).waiting;
  }

  private topic(type: string): Topic {
    let t = this.topics.get(type);
    if (!t) this.topics.set(type, (t = new Topic(this.config.partitions, this.config.retain)));
    return t;
  }

  /** Synchronous when every ring had room (the result itself); a promise when a push must wait (block). */
  write(units: readonly PublishUnit[]): Promise<WriteResult> | WriteResult {
    if (this.closed) return Promise.reject(new ClosedError('native transport'));
    // A push that must wait for room gives up publishTimeoutMs after this write, also when it first queues
    // behind earlier writes still waiting for room in its ring (their timeouts must not add up).
    let deadline = 0;
    let results: (Error | undefined)[] | undefined;
    let waits: Promise<void>[] | undefined;
    // A push waiting for room: the write settles after it, and its failure fails unit `u`.
    // With several groups the unit's error is the one that wrote the fewest of its events (`withWritten`).
    const awaitPush = (u: number, p: Promise<void>): void => {
      (waits ??= []).push(
        p.catch((err: Error) => {
          const r = (results ??= new Array(units.length).fill(undefined));
          const prev = r[u];
          if (prev === undefined || writtenCount(err) < writtenCount(prev)) r[u] = err;
        }),
      );
    };
    let retained: RetainedUnit[] | undefined;
    for (let u = 0; u < units.length; u++) {
      const unit = units[u]!;
      const topic = this.topic(unit.type);
      const waited = waits?.length ?? 0;
      let batch: EncodedBatch;
      try {
        batch = this.encode(unit);
        this.checkSizes(batch);
        if (this.mode === PushMode.allOrNothing && topic.groups.size > 1) this.refuseUnlessAllFit(topic, unit, batch);
        for (const group of topic.groups.values()) {
          const ring = `${group.lane}:${unit.partition}`;
          const before = this.blocked.get(ring);
          if (before) {
            // A ring still waiting for room (this write or an earlier one in flight): queue behind it, in order.
            const all = copyBatch(batch);
            const until = (deadline ||= Date.now() + this.config.publishTimeoutMs);
            const p = before.then(() => this.blockingPush(group, unit, all, until, all.n));
            this.chain(ring, p);
            awaitPush(u, p);
            continue;
          }
          const done = this.core.push(group.lane, unit.partition, batch.bytes, batch.lens, batch.chars, batch.n, this.mode);
          if (done > 0) group.kick();
          if (done < batch.n) {
            if (this.mode === PushMode.allOrNothing) throw this.full(group, unit);
            if (this.mode === PushMode.partial) {
              // Copy the rest now: `batch` is scratch memory reused by the next encode.
              const p = this.blockingPush(group, unit, copyBatch(batch, done), (deadline ||= Date.now() + this.config.publishTimeoutMs), batch.n);
              this.chain(ring, p);
              awaitPush(u, p);
            }
          }
        }
        // After the pushes: a unit `error` refused is not retained either.
        const history = topic.history[unit.partition];
        if (history !== undefined) {
          history.add(batch);
          // A unit still waiting for room: what it fails to write is taken back once it settles.
          const mark = waits !== undefined && waits.length > waited ? history.mark(batch.n) : undefined;
          if (mark !== undefined) (retained ??= []).push({ u, history, mark });
        }
      } catch (err) {
        (results ??= new Array(units.length).fill(undefined))[u] = this.mapError(err);
      }
    }
    if (waits) return Promise.all(waits).then(() => this.settled(results, retained));
    return results;
  }

  /**
   * The results of a write that waited: the events a unit failed to write (its error's `writtenCount` on)
   * leave the retained history, so a group created later does not replay events whose publish rejected
   * (and that the caller may publish again).
   */
  private settled(results: (Error | undefined)[] | undefined, retained: readonly RetainedUnit[] | undefined): (Error | undefined)[] | undefined {
    if (results === undefined || retained === undefined) return results;
    for (const { u, history, mark } of retained) {
      const err = results[u];
      if (err !== undefined) history.forget(mark, writtenCount(err));
    }
    return results;
  }

  /** The unit's records, in scratch memory valid until the next encode. */
  private encode(unit: PublishUnit): EncodedBatch {
    const serialize = this.ctx.serializer(unit.type);
    const writer = this.ctx.jsonWriter?.(unit.type);
    const run = unit.run;
    return run !== undefined ? encodeRun(run, serialize, writer, this.source) : encodeEvents(unit.events, serialize, writer, this.source);
  }

  /**
   * `error` with several groups: the unit goes to every group's ring or to none. Every ring is probed
   * before any is written (rings only gain room meanwhile: every push to them comes from this thread, so a
   * ring that had room still has it when write() pushes). When one has no room, the unit is refused without
   * writing to any ring, and counted as rejected by each ring that lacked room (`PushMode.refuse`: a real
   * push there to count it could take the unit if a consumer made room since the probe). A ring still
   * waiting for room for earlier events is left to write(), which queues the unit behind them.
   */
  private refuseUnlessAllFit(topic: Topic, unit: PublishUnit, batch: EncodedBatch): void {
    let refused: NativeGroup[] | undefined;
    for (const group of topic.groups.values()) {
      if (this.blocked.has(`${group.lane}:${unit.partition}`)) continue;
      if (this.core.push(group.lane, unit.partition, batch.bytes, batch.lens, batch.chars, batch.n, PushMode.probe) < batch.n) (refused ??= []).push(group);
    }
    if (!refused) return;
    for (const group of refused) this.core.push(group.lane, unit.partition, batch.bytes, batch.lens, batch.chars, batch.n, PushMode.refuse);
    throw this.full(refused[0]!, unit);
  }

  private full(group: NativeGroup, unit: PublishUnit): BackpressureError {
    const err = new BackpressureError(this.core.stats(group.lane, unit.partition)[5]!, this.core.capacity);
    err.message = `Partition ${unit.partition} of "${unit.type}" (group "${group.name}") is full (${this.core.capacity} events); backpressure is 'error'.`;
    return err;
  }

  /**
   * Writes `unit` when every consumer group's ring of its partition has room for all of it now, whatever
   * the backpressure strategy; else writes nothing and returns false. A ring with an earlier write still
   * waiting for room counts as full: the unit must not overtake it. All-or-nothing across groups holds
   * because every push to these rings comes from this thread (consumers only hand room back).
   */
  tryWrite(unit: PublishUnit): boolean {
    if (this.closed) throw new ClosedError('native transport');
    const topic = this.topic(unit.type);
    try {
      const batch = this.encode(unit);
      this.checkSizes(batch);
      for (const group of topic.groups.values()) {
        if (this.blocked.has(`${group.lane}:${unit.partition}`)) return false;
        if (this.core.push(group.lane, unit.partition, batch.bytes, batch.lens, batch.chars, batch.n, PushMode.probe) < batch.n) return false;
      }
      topic.history[unit.partition]?.add(batch);
      for (const group of topic.groups.values()) {
        const done = this.core.push(group.lane, unit.partition, batch.bytes, batch.lens, batch.chars, batch.n, PushMode.allOrNothing);
        if (done > 0) group.kick();
        if (done < batch.n) throw new NativeError(`Partition ${unit.partition} of "${unit.type}" (group "${group.name}") had room and then did not: another thread pushed to it`);
      }
      return true;
    } catch (err) {
      throw this.mapError(err);
    }
  }

  /**
   * Rings (`lane:partition`) with a blocked push in progress, across writes: with several writes in
   * flight, a later write must not slip events into a ring ahead of an earlier write's remainder.
   */
  private readonly blocked = new Map<string, Promise<void>>();

  private chain(ring: string, p: Promise<void>): void {
    const tail = p.then(
      () => undefined,
      () => undefined,
    );
    this.blocked.set(ring, tail);
    void tail.then(() => {
      if (this.blocked.get(ring) === tail) this.blocked.delete(ring);
    });
  }

  /**
   * Rejects a batch holding a record no ring can ever take (the core's limit: half the arena minus the batch
   * separator) before it is retained: with no group yet no push would refuse it, and once in the history
   * it would make every later `startFrom: '0'` replay of its chunk throw.
   */
  private checkSizes(batch: EncodedBatch): void {
    const limit = this.core.arenaBytes / 2 - 1;
    if (batch.bytes.length <= limit) return; // no record is longer than the whole batch: the usual case, no loop
    for (let i = 0; i < batch.n; i++) {
      if (batch.lens[i]! > limit) throw new PayloadTooLargeError(batch.lens[i]!, limit, 'transport.arenaBytes (half of it per event)');
    }
  }

  private mapError(err: unknown): Error {
    const code = (err as { code?: string }).code;
    if (code === 'ERR_PAYLOAD_TOO_LARGE') {
      const m = /record of (\d+) bytes exceeds the limit of (\d+)/.exec((err as Error).message);
      return new PayloadTooLargeError(Number(m?.[1] ?? 0), Number(m?.[2] ?? 0), 'transport.arenaBytes (half of it per event)');
    }
    if (code === 'ERR_CLOSED') return new ClosedError('native transport');
    if (err instanceof EventlaneError) return err;
    return new NativeError(err instanceof Error ? err.message : String(err), { cause: err });
  }

  /**
   * `block`: waits for room without blocking the event loop, until `deadline` (at least one try). `rest` is
   * the unit's last events (of `total`): its failure says how many of the unit's events the ring took.
   */
  private async blockingPush(group: NativeGroup, unit: PublishUnit, rest: EncodedBatch, deadline: number, total: number): Promise<void> {
    let b = rest;
    for (let spins = 0; ; spins++) {
      await new Promise<void>((resolve) => {
        const wake = (): void => {
          this.waiting.delete(wake);
          resolve();
        };
        this.waiting.add(wake);
        if (spins < 8) setImmediate(wake);
        else setTimeout(wake, 1);
      });
      if (this.closed) throw withWritten(new ClosedError('native transport'), total - b.n);
      if (group.removed) return; // no such group any more: the unit is written to every group there is
      const done = this.core.push(group.lane, unit.partition, b.bytes, b.lens, b.chars, b.n, PushMode.partial);
      if (done > 0) group.kick();
      if (done === b.n) return;
      if (done > 0) b = copyBatch(b, done);
      if (Date.now() >= deadline) {
        throw withWritten(
          new TimeoutError(
            `Partition ${unit.partition} of "${unit.type}" (group "${group.name}") stayed full for ${this.config.publishTimeoutMs} ms (${b.n} of ${total} events not accepted); raise transport.publishTimeoutMs or capacity.`,
          ),
          total - b.n,
        );
      }
    }
  }

  async subscribe(spec: SubscriptionSpec, handler: DeliveryHandler): Promise<TransportSubscription> {
    if (this.closed) throw new ClosedError('native transport');
    const opts = parseConfig(nativeSubscribeSchema, spec.options, 'subscribe options (native transport)');
    const useWorkers = opts.workers !== undefined || opts.handler !== undefined;
    if (useWorkers && opts.handler === undefined)
      throw new ConfigError('subscribe options: `workers` needs `handler` (a module URL or path).', [{ path: ['handler'], message: 'required with workers' }]);
    if (typeof opts.handler === 'string' && /^\.\.?[\\/]/.test(opts.handler)) {
      const message = `a relative path ("${opts.handler}") would resolve against eventlane's own folder: pass new URL('${opts.handler}', import.meta.url) or an absolute path`;
      throw new ConfigError(`subscribe options: handler: ${message}.`, [{ path: ['handler'], message }]);
    }
    if (useWorkers && typeof handler === 'function') {
      const message = 'a handler module runs in worker threads: pass it or a handler function, not both';
      throw new ConfigError(`subscribe options: handler: ${message}.`, [{ path: ['handler'], message }]);
    }
    if (!useWorkers && opts.cpus !== undefined)
      throw new ConfigError('subscribe options: `cpus` pins worker threads: it needs `workers` and `handler`.', [{ path: ['cpus'], message: 'only with workers' }]);
    if (!useWorkers && typeof handler !== 'function') throw new ConfigError('subscribe needs a handler function or options.handler.');
    const topic = this.topic(spec.type);
    let group = topic.groups.get(spec.group);
    if (!group) {
      const lane = this.createLane(spec.group);
      group = new NativeGroup(this.core, lane, spec.type, spec.group, this.config.partitions, {
        source: this.broker.service,
        maxDeadLetters: this.config.maxDeadLetters,
        batchSize: this.config.batchSize,
        spinUs: this.config.spinUs,
        hold: this.config.backpressure !== 'drop-oldest',
        reader: this.ctx.readerPlan?.(spec.type),
        waiting: topic.waiting,
        logger: this.ctx.logger,
      });
      topic.groups.set(spec.group, group);
      if (spec.startFrom === '0') this.replay(topic, group);
    }
    if (!useWorkers) return group.joinMain(spec, handler);
    const mod = opts.handler instanceof URL ? opts.handler.href : isAbsolute(opts.handler!) ? pathToFileURL(opts.handler!).href : opts.handler!;
    const joined = group;
    const joining = joined.joinWorkers(spec, opts.workers ?? 1, mod, opts.workerData, opts.cpus, this.closing.signal).catch((err: unknown) => {
      // A group nobody has joined after all (this subscribe created it, or found it being created by another
      // that failed too): taken out, or its rings would take every event published to the type, consumed by
      // nobody, until they were full and stalled the publishers. The last failed join takes it out.
      if (joined.abandoned && topic.groups.get(spec.group) === joined) this.removeGroup(topic, joined);
      throw err;
    });
    const settled = joining.then(
      () => undefined,
      () => undefined,
    );
    this.joining.add(settled);
    void settled.then(() => this.joining.delete(settled));
    return joining;
  }

  /** The rings of a new group; the memory refused is a NativeError naming the options that size it. */
  private createLane(group: string): number {
    try {
      return this.core.createLane(this.config.partitions);
    } catch (err) {
      const code = (err as { code?: string }).code;
      if (/too many lanes/.test((err as Error).message)) {
        throw new NativeError(
          `Cannot create consumer group "${group}": this transport has ${MAX_LANES} groups alive at once, the most it can (a deleted group counts until its consumer threads have exited); delete groups nobody consumes any more (transport.deleteGroup), or reuse group names`,
          { cause: err },
        );
      }
      if (code !== 'ERR_NATIVE_ALLOC' && !(err instanceof RangeError && /allocation failed/i.test(err.message))) throw this.mapError(err);
      const perRing = ringBytes(this.core.capacity, this.core.arenaBytes);
      const total = ((perRing * this.config.partitions) / 2 ** 20).toFixed(0);
      throw new NativeError(
        `Cannot allocate the rings of group "${group}": ${this.config.partitions} partition(s) x ${perRing} bytes (${total} MiB); lower transport.partitions, capacity or arenaBytes. ${(err as Error).message}`,
        { cause: err },
      );
    }
  }

  /**
   * Takes `group` (`unused`) out of its topic: writes stop going to its rings, a write waiting there for room
   * stops waiting (it checks `removed` before it pushes again), and a subscribe of the same name later creates
   * the group anew. Its rings are freed now, or as the last of its consumer threads exits (NativeGroup.remove).
   */
  private removeGroup(topic: Topic, group: NativeGroup): void {
    topic.groups.delete(group.name);
    group.remove();
    for (const wake of [...this.waiting]) wake();
  }

  /**
   * Copies the retained history into a new group's rings (what does not fit waits, as under `block`). A
   * remainder waiting for room is chained like a blocked write's, so later chunks and later writes to the
   * ring queue behind it instead of overtaking the history.
   */
  private replay(topic: Topic, group: NativeGroup): void {
    topic.history.forEach((h, partition) => {
      const ring = `${group.lane}:${partition}`;
      const unit: PublishUnit = { type: group.type, partition, events: [], bytes: 0 };
      const incomplete = (err: Error): void => this.ctx.logger.warn({ group: group.name, err: err.message }, 'history replay incomplete');
      const deadline = Date.now() + this.config.publishTimeoutMs;
      for (const chunk of h.chunks()) {
        const before = this.blocked.get(ring);
        if (before) {
          const all = copyBatch(chunk);
          const p = before.then(() => this.blockingPush(group, unit, all, deadline, all.n));
          this.chain(ring, p);
          p.catch(incomplete);
          continue;
        }
        const done = this.core.push(group.lane, partition, chunk.bytes, chunk.lens, chunk.chars, chunk.n, PushMode.partial);
        if (done < chunk.n) {
          const p = this.blockingPush(group, unit, copyBatch(chunk, done), deadline, chunk.n);
          this.chain(ring, p);
          p.catch(incomplete);
        }
      }
    });
  }

  async deadLetters(type: string, group?: string, limit = 1000): Promise<DeadLetter[]> {
    return deadLettersOf(this.topics.get(type)?.groups.values() ?? [], group, limit);
  }

  /** `bus.idle()`: events of the group not finished yet, an upper bound (see NativeGroup.unfinished); 0 for a group that does not exist. */
  unfinished(type: string, group: string): number {
    if (this.closed) throw new ClosedError('native transport');
    return this.topics.get(type)?.groups.get(group)?.unfinished() ?? 0;
  }

  /**
   * Deletes consumer group `group` of `type`, which nobody consumes any more: its rings take no more events
   * (a group whose subscriptions all closed keeps them, and under `block` its full rings stall every publisher
   * of the type), a write waiting there for room stops waiting, and its queued events and dead letters go; its
   * rings are freed at once, or as the last consumer thread of a closing subscription exits (NativeGroup.remove).
   * `true` when there was such a group; a group with members (or a subscribe still joining) is a ConfigError.
   */
  deleteGroup(type: string, group: string): boolean {
    if (this.closed) throw new ClosedError('native transport');
    const topic = this.topics.get(type);
    const g = topic?.groups.get(group);
    if (topic === undefined || g === undefined) return false;
    if (!g.unused) {
      const message = 'has members: close its subscriptions first';
      throw new ConfigError(`deleteGroup: group "${group}" of "${type}" ${message}.`, [{ path: ['group'], message }]);
    }
    this.removeGroup(topic, g);
    return true;
  }

  /** Exact ring counters of one partition of a (type, group). */
  stats(type: string, partition: number, group: string): RingStats | undefined {
    return this.topics
      .get(type)
      ?.groups.get(group ?? '')
      ?.ringStats(partition);
  }

  /** Counters summed over every ring of a type (all groups and partitions). */
  totals(type: string): RingStats {
    const sum: RingStats = { pushed: 0, popped: 0, droppedNewest: 0, droppedOldest: 0, rejected: 0, size: 0, held: 0 };
    const topic = this.topics.get(type);
    if (!topic) return sum;
    for (const g of topic.groups.values()) {
      for (let p = 0; p < this.config.partitions; p++) {
        const s = g.ringStats(p);
        for (const k of Object.keys(sum) as (keyof RingStats)[]) sum[k] += s[k];
      }
    }
    return sum;
  }

  /** Idempotent: a second call resolves when the first has ended every thread, not at once. */
  close(): Promise<void> {
    this.closeDone ??= this.doClose();
    return this.closeDone;
  }

  private closeDone: Promise<void> | undefined;

  private async doClose(): Promise<void> {
    this.closed = true;
    this.closing.abort();
    for (const wake of [...this.waiting]) wake();
    await Promise.all(this.joining);
    if (!brokers.release(this.config.name)) return;
    this.core.close();
    const groups: NativeGroup[] = [];
    for (const t of this.topics.values()) groups.push(...t.groups.values());
    await Promise.all(groups.map((g) => g.terminate()));
    this.core.release();
  }
}

export function createNativeTransport(config: Record<string, unknown>, ctx: TransportContext): NativeTransport {
  return new NativeTransport(parseConfig(nativeConfigSchema, config, 'transport'), ctx);
}
