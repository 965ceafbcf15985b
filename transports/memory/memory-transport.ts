/**
 * The in-memory transport: the delivery contract of Redis consumer groups inside one process.
 * Every group gets every event; members of a group share its partitions (a partition belongs to one
 * member at a time, so per-key order holds); handlers ack by resolving; failures are retried with
 * backoff and dead-lettered after `maxDeliveries`. Acked events are released; what is retained for
 * groups created later with `startFrom: '0'` is bounded by `maxLen` per partition.
 */
import { z } from 'zod';
import { DEFAULT_MAX_EVENT_BYTES, parseConfig, parseTransportSubscribeOptions } from '../../src/config.js';
import type { GroupCounts, GroupTarget } from '../../src/group-counts.js';
import { ClosedError } from '../../src/errors.js';
import type { DeadLetter, DeliveryHandler, PublishUnit, SubscriptionSpec, Transport, TransportCapabilities, TransportContext, TransportSubscription, WriteResult } from '../../src/transport.js';
import { Deque } from '../../src/deque.js';
import { deadLettersOf, partitionsMismatch, SharedBrokers } from '../../src/shared-brokers.js';
import { ConsumerGroup, Tagged, type Item } from './consumer-group.js';

export const memoryConfigSchema = z
  .object({
    type: z.literal('memory'),
    /**
     * Name of an in-process broker: buses in one process that use the same name share topics and
     * consumer groups, as they would on a real broker. Unnamed transports are private to their bus.
     */
    name: z.string().min(1).max(200).optional(),
    /**
     * Partitions per event type. On a named broker the first bus to use a type records its count there; a bus
     * that sets none uses the recorded count, and one that sets another is refused with a ConfigError.
     * @default the count recorded on the broker, else 1
     */
    partitions: z.number().int().min(1).max(4096).optional(),
    /** Events retained per partition for groups that start from '0'. @default 10000 */
    maxLen: z.number().int().min(0).default(10_000),
    /** Dead letters kept per group. @default 10000 */
    maxDeadLetters: z.number().int().min(0).default(10_000),
    /** Largest event accepted (bytes, JSON). @default 1 MiB, as on every transport */
    maxEventBytes: z.number().int().min(1).default(DEFAULT_MAX_EVENT_BYTES),
  })
  .strict();

export type MemoryTransportConfig = z.input<typeof memoryConfigSchema>;

class Topic {
  readonly retained: Deque<Item>[];
  /** The type's partitions, set by the bus that created the topic. */
  readonly partitions: number;
  readonly groups = new Map<string, ConsumerGroup>();
  /**
   * @param source The service of the bus that created the topic: its events are queued bare, those of
   * other buses sharing the broker are tagged with their own service (an event's `source` is its publisher's).
   */
  constructor(
    partitions: number,
    readonly source: string,
  ) {
    this.partitions = partitions;
    this.retained = Array.from({ length: partitions }, () => new Deque<Item>());
  }
}

interface Broker {
  /** Per event type: its topic, with the partition count of the bus that first used it. */
  readonly topics: Map<string, Topic>;
}

/** Topics of in-process brokers, shared by every transport opened with the same `name`. */
const brokers = new SharedBrokers<Broker>();

export class MemoryTransport implements Transport {
  readonly type = 'memory';
  readonly capabilities: TransportCapabilities;
  private readonly topics: Map<string, Topic>;
  private closed = false;

  constructor(
    private readonly config: z.output<typeof memoryConfigSchema>,
    private readonly ctx: TransportContext,
  ) {
    this.capabilities = { encoding: 'none', maxInFlight: 1, maxEventBytes: config.maxEventBytes };
    this.topics = brokers.acquire(config.name, () => ({ topics: new Map() })).topics;
  }

  /** Records the partition count of each declared type on the broker, or refuses a count that differs from the recorded one. */
  async connect(): Promise<void> {
    if (this.closed) throw new ClosedError('memory transport');
    const configured = this.config.partitions;
    const refused = configured === undefined ? undefined : this.ctx.eventTypes.find((type) => this.topic(type).partitions !== configured);
    if (refused === undefined) return;
    await this.close();
    throw partitionsMismatch(`memory broker "${this.config.name}"`, refused, configured!, this.topic(refused).partitions);
  }

  /** The count recorded on the broker for the type (by this bus, or the first that used it). */
  partitionsFor(type: string): number {
    return this.topic(type).partitions;
  }

  private topic(type: string): Topic {
    let t = this.topics.get(type);
    if (!t) {
      t = new Topic(this.config.partitions ?? 1, this.ctx.service);
      this.topics.set(type, t);
    }
    return t;
  }

  /**
   * Completes before it returns (no promise): the batcher frees its write slot at once, so `tryPublish` can
   * hand everything buffered to the groups first (with a promise, only one batch could go synchronously and
   * `tryPublish` returned false behind a burst of `publish()` calls, on a transport that always has room).
   */
  write(units: readonly PublishUnit[]): WriteResult {
    if (this.closed) throw new ClosedError('memory transport');
    for (let u = 0; u < units.length; u++) {
      const unit = units[u]!;
      const topic = this.topic(unit.type);
      const service = this.ctx.service;
      const items: readonly Item[] = service === topic.source ? unit.events : unit.events.map((e) => new Tagged(e, service, 1));
      if (this.config.maxLen > 0) {
        const log = topic.retained[unit.partition]!;
        log.pushAll(items);
        log.trimTo(this.config.maxLen);
      }
      for (const group of topic.groups.values()) group.enqueue(unit.partition, items);
    }
    return undefined;
  }

  /** Always has room (its queues are unbounded): writes the unit now. */
  tryWrite(unit: PublishUnit): boolean {
    if (this.closed) throw new ClosedError('memory transport');
    this.write([unit]);
    return true;
  }

  async subscribe(spec: SubscriptionSpec, handler: DeliveryHandler): Promise<TransportSubscription> {
    if (this.closed) throw new ClosedError('memory transport');
    if (Object.keys(spec.options).length > 0) {
      parseTransportSubscribeOptions(z.object({}).strict(), spec.options, 'subscribe options (memory transport)');
    }
    const topic = this.topic(spec.type);
    let group = topic.groups.get(spec.group);
    if (!group) {
      group = new ConsumerGroup(spec.type, spec.group, topic.partitions, topic.source, this.config.maxDeadLetters, this.ctx.logger);
      topic.groups.set(spec.group, group);
      if (spec.startFrom === '0') topic.retained.forEach((log, p) => group!.enqueue(p, log.toArray()));
    }
    return group.join(spec, handler);
  }

  async deadLetters(type: string, group?: string, limit = 1000): Promise<DeadLetter[]> {
    return deadLettersOf(this.topics.get(type)?.groups.values() ?? [], group, limit);
  }

  /** `bus.idle()`: what the group has queued, running and waiting for a retry (0 for a group that does not exist). */
  unfinished(type: string, group: string): number {
    if (this.closed) throw new ClosedError('memory transport');
    return this.topics.get(type)?.groups.get(group)?.unfinished() ?? 0;
  }

  /** `bus.groupCounts()`: exact; a group that does not exist has nothing queued (0). */
  async groupCounts(targets: readonly GroupTarget[]): Promise<GroupCounts[]> {
    if (this.closed) throw new ClosedError('memory transport');
    return targets.map(({ type, group }) => {
      const c = this.topics.get(type)?.groups.get(group)?.counts() ?? { lag: 0, pending: 0 };
      return { type, group, lagEvents: c.lag, pendingEvents: c.pending };
    });
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    if (!brokers.release(this.config.name)) return;
    for (const topic of this.topics.values()) for (const g of topic.groups.values()) g.stopTimers();
  }
}

export function createMemoryTransport(config: Record<string, unknown>, ctx: TransportContext): MemoryTransport {
  return new MemoryTransport(parseConfig(memoryConfigSchema, config, 'transport'), ctx);
}
