/**
 * The `native` transport: events of each (type, consumer group) go through per-partition lock-free rings
 * in the partition core (the N-API addon, or its SharedArrayBuffer fallback). One core call per unit and
 * group. The last `maxLen` events of each partition are also kept (`History`) so a group created later
 * with `startFrom: '0'` can read them. The shared state is broker.ts's, pushes waiting for room
 * blocked-rings.ts's, a write's outcome write-outcome.ts's, and what a subscription's options ask for
 * subscribe-mode.ts's.
 */
import { deadLettersOf, partitionsMismatch } from '../../src/shared-brokers.js';
import { DEFAULT_MAX_EVENT_BYTES, parseConfig } from '../../src/config.js';
import { ClosedError, ConfigError, NativeError, PayloadTooLargeError } from '../../src/errors.js';
import type { GroupCounts, GroupTarget } from '../../src/group-counts.js';
import type {
  DeadLetter,
  DeliveryHandler,
  PublishInput,
  PublishUnit,
  SubscriptionSpec,
  Transport,
  TransportCapabilities,
  TransportContext,
  TransportSubscription,
  UnitForm,
  WriteResult,
  WriteSettlement,
} from '../../src/transport.js';
import { PushMode, type PartitionCore, type RingStats } from '../../native/loader.js';
import { nativeConfigSchema, type ResolvedNativeConfig } from './config.js';
import { NativeGroup } from './group.js';
import { copyBatch, RECORD_HEADER_BYTES, type EncodedBatch } from './record.js';
import { encodeEvents, encodeRun } from './record-encode.js';
import { consumerWaitProbe } from './wait-probe.js';
import { maxEventBytesOf, openBroker, releaseBroker, Topic, type Broker } from './broker.js';
import { BlockedRings, ringKey } from './blocked-rings.js';
import { coreError, fullError, laneError } from './core-errors.js';
import { subscribeMode, type SubscribeMode } from './subscribe-mode.js';
import { WriteOutcome } from './write-outcome.js';

const MODE = {
  block: PushMode.partial,
  'drop-newest': PushMode.dropNewest,
  'drop-oldest': PushMode.evictOldest,
  error: PushMode.allOrNothing,
} as const;

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
  /** Pushes waiting for room, and the rings they block. */
  private readonly rings: BlockedRings;

  /**
   * @param tuning Not transport options: `spinUs`, how long worker consumers spin on an empty ring before they
   * sleep on the futex (0: at once), for a benchmark that measures a spinning consumer.
   */
  constructor(
    readonly config: ResolvedNativeConfig,
    private readonly ctx: TransportContext,
    private readonly tuning: { readonly spinUs?: number } = {},
  ) {
    const broker = openBroker(config, ctx);
    this.broker = broker;
    this.core = broker.core;
    this.topics = broker.topics;
    this.implementation = this.core.kind;
    this.source = ctx.service === broker.service ? undefined : ctx.service;
    this.rings = new BlockedRings(this.core, config.publishTimeoutMs);
    // Runs written as bytes at publish, with room for the record header, when the records are plain (no source).
    const input: PublishInput = this.source === undefined ? { kind: 'runBytes', room: RECORD_HEADER_BYTES } : { kind: 'runs' };
    // `block` may write a unit's first events and time out on the rest (blockingPush). `error` takes a unit
    // whole or refuses it: a unit larger than an empty ring would always be refused (a burst of publish() calls
    // in one tick, batched into one unit, must not be refused whole by an empty ring).
    const units: UnitForm = config.backpressure === 'block' ? { partial: true } : config.backpressure === 'error' ? { maxEvents: this.core.capacity, maxBytes: this.core.arenaBytes / 4 } : {};
    const maxEventBytes = config.maxEventBytes ?? Math.min(DEFAULT_MAX_EVENT_BYTES, maxEventBytesOf(this.core));
    this.capabilities = { encoding: 'none', maxInFlight: 64, maxEventBytes, input, units };
    this.mode = MODE[config.backpressure];
  }

  /** This bus's service when it is not the broker's: written into each record (a bus sharing a named broker). */
  private readonly source: string | undefined;

  /** Records the partition count of each declared type on the broker, or refuses a count that differs from the recorded one. */
  async connect(): Promise<void> {
    if (this.closed) throw new ClosedError('native transport');
    const configured = this.config.partitions;
    const refused = configured === undefined ? undefined : this.ctx.eventTypes.find((type) => this.topic(type).partitions !== configured);
    if (refused === undefined) return;
    await this.close();
    throw partitionsMismatch(`native broker "${this.config.name}"`, refused, configured!, this.topic(refused).partitions);
  }

  /** The count recorded on the broker for the type (by this bus, or the first that used it). */
  partitionsFor(type: string): number {
    return this.topic(type).partitions;
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
    if (!t) this.topics.set(type, (t = new Topic(this.config.partitions ?? 1, this.config.maxLen)));
    return t;
  }

  /**
   * Synchronous when every ring had room (the result itself); a promise when a push must wait (block). A unit
   * written in part (`block` when publishTimeoutMs runs out) is reported through `settle.failed`.
   */
  write(units: readonly PublishUnit[], settle: WriteSettlement): Promise<WriteResult> | WriteResult {
    if (this.closed) return Promise.reject(new ClosedError('native transport'));
    const w = new WriteOutcome(units.length, this.config.publishTimeoutMs, settle);
    for (let u = 0; u < units.length; u++) {
      const unit = units[u]!;
      const topic = this.topic(unit.type);
      const waited = w.waiting;
      try {
        const batch = this.encode(unit);
        this.checkSizes(batch);
        if (this.mode === PushMode.allOrNothing && topic.groups.size > 1) this.refuseUnlessAllFit(topic, unit, batch);
        for (const group of topic.groups.values()) this.pushUnit(group, unit, batch, u, w);
        // After the pushes: a unit `error` refused is not retained either.
        const history = topic.history[unit.partition];
        if (history !== undefined) w.retain(u, history, batch, waited);
      } catch (err) {
        w.fail(u, coreError(err));
      }
    }
    return w.result();
  }

  /**
   * Pushes unit `u` (its records in `batch`) to the group's ring of its partition. A push that must wait for
   * room (behind an earlier one still waiting, or the rest under `block`) is chained and left to `w` to await.
   */
  private pushUnit(group: NativeGroup, unit: PublishUnit, batch: EncodedBatch, u: number, w: WriteOutcome): void {
    const ring = ringKey(group, unit.partition);
    const before = this.rings.tail(ring);
    if (before) {
      // A ring still waiting for room (this write or an earlier one in flight): queue behind it, in order.
      const all = copyBatch(batch);
      const until = w.deadline();
      const p = before.then(() => this.rings.blockingPush(group, unit, all, until, all.n));
      this.rings.chain(ring, p);
      w.awaitPush(u, p);
      return;
    }
    const done = this.core.push(group.lane, unit.partition, batch.bytes, batch.lens, batch.chars, batch.n, this.mode);
    if (done > 0) group.kick();
    if (done < batch.n) {
      if (this.mode === PushMode.allOrNothing) throw fullError(this.core, group, unit);
      if (this.mode === PushMode.partial) {
        // Copy the rest now: `batch` is scratch memory reused by the next encode.
        const p = this.rings.blockingPush(group, unit, copyBatch(batch, done), w.deadline(), batch.n);
        this.rings.chain(ring, p);
        w.awaitPush(u, p);
      }
    }
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
      if (this.rings.has(ringKey(group, unit.partition))) continue;
      if (this.core.push(group.lane, unit.partition, batch.bytes, batch.lens, batch.chars, batch.n, PushMode.probe) < batch.n) (refused ??= []).push(group);
    }
    if (!refused) return;
    for (const group of refused) this.core.push(group.lane, unit.partition, batch.bytes, batch.lens, batch.chars, batch.n, PushMode.refuse);
    throw fullError(this.core, refused[0]!, unit);
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
        if (this.rings.has(ringKey(group, unit.partition))) return false;
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
      throw coreError(err);
    }
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
      if (batch.lens[i]! > limit) throw new PayloadTooLargeError(batch.lens[i]!, limit, 'transport.maxEventBytes (the ring arena holds four of the largest event)');
    }
  }

  async subscribe(spec: SubscriptionSpec, handler: DeliveryHandler): Promise<TransportSubscription> {
    if (this.closed) throw new ClosedError('native transport');
    const mode = subscribeMode(spec, handler);
    const topic = this.topic(spec.type);
    const group = topic.groups.get(spec.group) ?? this.createGroup(topic, spec);
    if (mode.kind === 'main') return group.joinMain(spec, mode.handler);
    return this.joinWorkers(topic, group, spec, mode);
  }

  /** A new group of the topic, with the retained history in its rings when it starts from '0'. */
  private createGroup(topic: Topic, spec: SubscriptionSpec): NativeGroup {
    const lane = this.createLane(spec.group, topic.partitions);
    const group = new NativeGroup(this.core, lane, spec.type, spec.group, topic.partitions, {
      source: this.broker.service,
      maxDeadLetters: this.config.maxDeadLetters,
      spinUs: this.tuning.spinUs ?? 0,
      hold: this.config.backpressure !== 'drop-oldest',
      reader: this.ctx.readerPlan?.(spec.type),
      waiting: topic.waiting,
      logger: this.ctx.logger,
    });
    topic.groups.set(spec.group, group);
    if (spec.startFrom === '0') {
      this.rings.replay(topic.history, group, (err) => this.ctx.logger.warn({ group: group.name, err: err.message }, 'history replay incomplete'));
    }
    return group;
  }

  /** Joins worker threads to `group`; close() waits for the join to settle. */
  private joinWorkers(topic: Topic, group: NativeGroup, spec: SubscriptionSpec, mode: Extract<SubscribeMode, { kind: 'workers' }>): Promise<TransportSubscription> {
    const joining = group.joinWorkers(spec, mode.workers, mode.module, mode.workerData, mode.cpus, this.closing.signal).catch((err: unknown) => {
      // A group nobody has joined after all (this subscribe created it, or found it being created by another
      // that failed too): taken out, or its rings would take every event published to the type, consumed by
      // nobody, until they were full and stalled the publishers. The last failed join takes it out.
      if (group.abandoned && topic.groups.get(spec.group) === group) this.removeGroup(topic, group);
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
  private createLane(group: string, partitions: number): number {
    try {
      return this.core.createLane(partitions);
    } catch (err) {
      throw laneError(err, group, this.core, partitions);
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
    this.rings.wakeAll();
  }

  async deadLetters(type: string, group?: string, limit = 1000): Promise<DeadLetter[]> {
    return deadLettersOf(this.topics.get(type)?.groups.values() ?? [], group, limit);
  }

  /** `bus.idle()`: events of the group not finished yet, an upper bound (see NativeGroup.counts); 0 for a group that does not exist. */
  unfinished(type: string, group: string): number {
    if (this.closed) throw new ClosedError('native transport');
    const c = this.topics.get(type)?.groups.get(group)?.counts();
    return c === undefined ? 0 : c.lag + c.pending + c.again;
  }

  /** `bus.groupCounts()`: see NativeGroup.counts (0 for a group that does not exist). */
  async groupCounts(targets: readonly GroupTarget[]): Promise<GroupCounts[]> {
    if (this.closed) throw new ClosedError('native transport');
    return targets.map(({ type, group }) => {
      const c = this.topics.get(type)?.groups.get(group)?.counts();
      return { type, group, lagEvents: c?.lag ?? 0, pendingEvents: c?.pending ?? 0 };
    });
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
      for (let p = 0; p < topic.partitions; p++) {
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
    this.rings.close();
    await Promise.all(this.joining);
    if (!releaseBroker(this.config.name)) return;
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
