/**
 * my-queue: the transport docs/writing-a-transport.md builds, whole. Brokers live in this process: transports
 * whose blocks name the same broker share its topics and groups, as buses on one server would; an unnamed one
 * gets a broker of its own. Events are kept in memory only (10,000 per partition for groups that start from '0').
 */
import { z } from 'zod';
import type { EventEnvelope } from 'eventlane';
import {
  ClosedError,
  ConfigError,
  DeliveryEngine,
  registerTransport,
  type DeadLetter,
  type DeliveryContext,
  type DeliveryHandler,
  type RetryVerdict,
  type OutgoingEvent,
  type PublishUnit,
  type SubscriptionSpec,
  type Transport,
  type TransportContext,
  type TransportSubscription,
} from 'eventlane/transport';

export const myQueueConfig = z
  .object({
    type: z.literal('my-queue'),
    /** The in-process broker to share; unnamed: a broker of this transport's own. */
    name: z.string().min(1).optional(),
    /** Partitions per event type; unset: the count the broker holds for the type (set by the first bus to use it), else 1. */
    partitions: z.number().int().min(1).optional(),
  })
  .strict();
type MyQueueConfig = z.output<typeof myQueueConfig>;

declare module 'eventlane' {
  interface TransportConfigs {
    'my-queue': z.input<typeof myQueueConfig>;
  }
}

/** The block as given, checked: a bad one is a ConfigError naming the field. */
function parseBlock(block: Record<string, unknown>): MyQueueConfig {
  const parsed = myQueueConfig.safeParse(block);
  if (parsed.success) return parsed.data;
  const issues = parsed.error.issues.map((i) => ({ path: ['transport', ...i.path.map(String)], message: i.message, code: i.code }));
  throw new ConfigError(`Invalid transport: ${issues.map((i) => `${i.path.join('.')}: ${i.message}`).join('; ')}`, issues);
}

const RETAINED = 10_000;

/** An event type's partitions: what is retained for groups that start from '0', and the groups. */
class Topic {
  readonly retained: Delivery[][];
  readonly groups = new Map<string, Group>();
  constructor(readonly partitions: number) {
    this.retained = Array.from({ length: partitions }, () => []);
  }

  append(partition: number, deliveries: readonly Delivery[]): void {
    const log = this.retained[partition]!;
    for (const d of deliveries) log.push(d);
    if (log.length > RETAINED) log.splice(0, log.length - RETAINED);
    for (const g of this.groups.values()) g.enqueue(partition, deliveries);
  }
}

interface Broker {
  /** Per event type, with the partition count of the first bus that used it. */
  readonly topics: Map<string, Topic>;
  users: number;
}

/** The named brokers of this process, each kept while a transport uses it. */
const brokers = new Map<string, Broker>();

function acquire(config: MyQueueConfig): Broker {
  const broker = (config.name !== undefined && brokers.get(config.name)) || { topics: new Map<string, Topic>(), users: 0 };
  if (config.name !== undefined) brokers.set(config.name, broker);
  broker.users++;
  return broker;
}

export class MyQueue implements Transport {
  readonly type = 'my-queue';
  // encoding 'none': events stay objects in this process. maxInFlight: writes the batcher keeps going at once.
  readonly capabilities = { encoding: 'none', maxInFlight: 1, maxEventBytes: 1024 * 1024 } as const;
  private readonly broker: Broker;
  private closed = false;

  constructor(
    private readonly config: MyQueueConfig,
    private readonly ctx: TransportContext,
  ) {
    this.broker = acquire(config);
  }

  /** Each declared type gets the broker's count (the first bus to use a type sets it); another configured count is refused. */
  async connect(): Promise<void> {
    const mine = this.config.partitions;
    const other = mine === undefined ? undefined : this.ctx.eventTypes.find((type) => this.topic(type).partitions !== mine);
    if (other === undefined) return;
    await this.close();
    const message = `transport.partitions is ${mine} for "${other}", but broker "${this.config.name}" has ${this.topic(other).partitions} partitions for it`;
    throw new ConfigError(`Invalid transport: ${message}`, [{ path: ['transport', 'partitions'], message }]);
  }

  partitionsFor(type: string): number {
    return this.topic(type).partitions;
  }

  private topic(type: string): Topic {
    let topic = this.broker.topics.get(type);
    if (topic === undefined) this.broker.topics.set(type, (topic = new Topic(this.config.partitions ?? 1)));
    return topic;
  }

  /** Stores every unit before it returns: the result, not a promise, frees the batcher's write slot at once. */
  write(units: readonly PublishUnit[]): undefined {
    if (this.closed) throw new ClosedError('my-queue transport');
    for (const unit of units) {
      const deliveries = unit.events.map((event) => ({ event, source: this.ctx.service, attempt: 1 }));
      this.topic(unit.type).append(unit.partition, deliveries);
    }
    return undefined;
  }

  async subscribe(spec: SubscriptionSpec, handler: DeliveryHandler): Promise<TransportSubscription> {
    if (this.closed) throw new ClosedError('my-queue transport');
    const unknown = Object.keys(spec.options);
    if (unknown.length > 0) throw new ConfigError(`my-queue takes no subscribe options (got ${unknown.join(', ')})`);
    const topic = this.topic(spec.type);
    let group = topic.groups.get(spec.group);
    if (group === undefined) {
      group = new Group(spec.group, topic.partitions);
      topic.groups.set(spec.group, group);
      if (spec.startFrom === '0') topic.retained.forEach((log, p) => group!.enqueue(p, log));
    }
    return group.join(spec, handler);
  }

  async deadLetters(type: string, group?: string, limit = 1000): Promise<DeadLetter[]> {
    const groups = [...(this.broker.topics.get(type)?.groups.values() ?? [])];
    const dead = groups.filter((g) => group === undefined || g.name === group).flatMap((g) => g.dead);
    return dead.sort((a, b) => a.deadAt - b.deadAt).slice(0, limit);
  }

  unfinished(type: string, group: string): number {
    return this.broker.topics.get(type)?.groups.get(group)?.unfinished() ?? 0;
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    if (--this.broker.users > 0) return;
    if (this.config.name !== undefined) brokers.delete(this.config.name);
    for (const topic of this.broker.topics.values()) for (const g of topic.groups.values()) g.stop();
  }
}

/** An event on its way to a group: the service that published it, and the attempt it is on. */
interface Delivery {
  readonly event: OutgoingEvent;
  readonly source: string;
  readonly attempt: number;
}

/** A delivery under way, and the partition it holds until its handler ends. */
interface Taken {
  readonly delivery: Delivery;
  readonly partition: number;
}

function envelopeOf({ event, source }: Delivery): EventEnvelope {
  const env: { -readonly [K in keyof EventEnvelope]: EventEnvelope[K] } = { id: event.id, type: event.type, source, time: event.time, data: event.data };
  if (event.key !== undefined) env.key = event.key;
  if (event.correlationId !== undefined) env.correlationId = event.correlationId;
  if (event.causationId !== undefined) env.causationId = event.causationId;
  if (event.headers !== undefined) env.headers = { ...event.headers }; // each delivery its own copy
  return env;
}

/**
 * A subscription: the delivery engine, fed from the partitions this member owns. The engine runs the handlers
 * (`concurrency` at once) and applies the rules; the member says where events come from and what each verdict
 * does here.
 */
class Member extends DeliveryEngine<Taken> {
  partitions: number[] = [];
  /** Given up at the drain, in the order they were taken: the group puts them back (`leave`). */
  readonly givenUp: Taken[] = [];

  constructor(
    private readonly group: Group,
    override readonly spec: SubscriptionSpec,
    handler: DeliveryHandler,
  ) {
    super(spec, handler);
  }

  /** The next event of an owned partition that no other member still handles, round robin. */
  protected startNext(): boolean {
    const i = this.partitions.findIndex((p) => this.group.mayTake(this, p));
    if (i < 0) return false;
    const [p] = this.partitions.splice(i, 1);
    this.partitions.push(p!); // the partitions after it go first next time
    const taken = { delivery: this.group.take(this, p!), partition: p! };
    const ctx = { attempt: taken.delivery.attempt, group: this.group.name, consumer: this.spec.consumer, partition: p! };
    this.startHandler(taken, 0, envelopeOf(taken.delivery), ctx);
    return true;
  }

  protected override ended(taken: Taken): void {
    this.group.release(taken.partition);
  }

  protected succeeded(): void {}

  protected retry({ delivery, partition }: Taken, _i: number, _env: EventEnvelope, _ctx: DeliveryContext, next: RetryVerdict): void {
    this.group.retryLater(partition, { ...delivery, attempt: next.attempt }, next.delayMs);
  }

  protected dead(_taken: Taken, _i: number, _env: EventEnvelope, dl: DeadLetter): void {
    this.group.dead.push(dl);
  }

  /** Outlived the drain before its last attempt: it goes back to the group, for another member. */
  protected handBack({ delivery, partition }: Taken, _i: number, _env: EventEnvelope, ctx: DeliveryContext): void {
    this.givenUp.push({ delivery: { ...delivery, attempt: ctx.attempt + 1 }, partition });
  }

  /** A partition may have come free for another member too. */
  protected override resume(): void {
    this.group.schedule();
  }
}

/**
 * A consumer group: a queue per partition, members that own partitions (partition p is member p % n's), retries
 * on timers, dead letters. A partition's events go to one member at a time: its new owner after a rebalance
 * starts on it once the previous owner's handlers on it have finished.
 */
class Group {
  readonly dead: DeadLetter[] = [];
  private readonly queues: Delivery[][];
  private readonly owner: (Member | undefined)[];
  private readonly runningOn: number[];
  private readonly retries = new Set<NodeJS.Timeout>();
  private members: Member[] = [];
  private scheduled = false;

  constructor(
    readonly name: string,
    partitions: number,
  ) {
    this.queues = Array.from({ length: partitions }, () => []);
    this.owner = new Array<Member | undefined>(partitions).fill(undefined);
    this.runningOn = new Array<number>(partitions).fill(0);
  }

  enqueue(partition: number, deliveries: readonly Delivery[]): void {
    for (const d of deliveries) this.queues[partition]!.push(d);
    this.schedule();
  }

  join(spec: SubscriptionSpec, handler: DeliveryHandler): TransportSubscription {
    const member = new Member(this, spec, handler);
    this.members.push(member);
    this.rebalance();
    this.schedule();
    let closing: Promise<void> | undefined;
    return { close: () => (closing ??= this.leave(member)) };
  }

  /** Events not finished: queued, running, or waiting for their next attempt. */
  unfinished(): number {
    return this.retries.size + this.queues.reduce((n, q) => n + q.length, 0) + this.runningOn.reduce((n, r) => n + r, 0);
  }

  stop(): void {
    for (const t of this.retries) clearTimeout(t);
    this.retries.clear();
  }

  private rebalance(): void {
    for (const m of this.members) m.partitions = [];
    this.queues.forEach((_, p) => this.members[p % this.members.length]?.partitions.push(p));
  }

  /** Stops taking events, waits for the member's handlers up to drainTimeoutMs, and gives up those still running. */
  private async leave(member: Member): Promise<void> {
    member.stopTaking();
    this.members = this.members.filter((m) => m !== member);
    this.rebalance();
    const drainMs = member.spec.drainTimeoutMs;
    if (await member.drain(drainMs)) member.giveUpRunning(drainMs);
    // At the front of their partitions, last first, so they keep the order they were taken in.
    for (const { delivery, partition } of member.givenUp.reverse()) this.queues[partition]!.unshift(delivery);
    this.schedule();
  }

  /** Delivers on a later turn, never inside write() or subscribe(): a handler may publish or subscribe. */
  schedule(): void {
    if (this.scheduled) return;
    this.scheduled = true;
    setImmediate(() => {
      this.scheduled = false;
      for (const m of this.members) m.pump();
    });
  }

  /** Whether `m` may take the next event of partition `p`: one is queued, and no other member handles `p`. */
  mayTake(m: Member, p: number): boolean {
    return (this.owner[p] === undefined || this.owner[p] === m) && this.queues[p]!.length > 0;
  }

  /** The next event of partition `p`, which `m` holds until its handler ends (`release`). */
  take(m: Member, p: number): Delivery {
    this.owner[p] = m;
    this.runningOn[p]!++;
    return this.queues[p]!.shift()!;
  }

  release(p: number): void {
    if (--this.runningOn[p]! === 0) this.owner[p] = undefined;
  }

  retryLater(p: number, d: Delivery, delayMs: number): void {
    const timer = setTimeout(() => {
      this.retries.delete(timer);
      this.enqueue(p, [d]);
    }, delayMs);
    this.retries.add(timer);
  }
}

// The factory gets the `transport` block as given and the bus's context; it may be async.
registerTransport('my-queue', (block, ctx) => new MyQueue(parseBlock(block), ctx));
