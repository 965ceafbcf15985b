/**
 * The event bus: typed publish/subscribe over a pluggable transport. `EventBus` is the facade: it checks a
 * call's arguments and hands the work to the module that owns it: the per-type plans (src/type-plans.ts), the
 * publisher and its single publish path (src/publisher.ts), the bulk path (src/bulk-publish.ts), the batcher,
 * `idle()`'s polling (src/idle.ts), the dead-letter check (src/dead-letters.ts) and close (src/bus-close.ts).
 * Subscribing is here: it wraps the handler with the consumer-side validation and hands it to the transport.
 * `createEventBus` builds the transport from the registry and the bus over it.
 */
import { busHealth, progressOf, stallMsOf, transportHealth } from './bus-health.js';
import type { BusHealth, HealthOptions } from './health.js';
import { publishChannel, refused, rejected, traced } from './diagnostics.js';
import { tracedPublish } from './publish-trace.js';
import { Batcher } from './batcher.js';
import { closeBus } from './bus-close.js';
import { publishMany } from './bulk-publish.js';
import { batcherOptions, busConfigSchema, idleOptionsSchema, parseConfig, subscribeOptionsSchema } from './config.js';
import { readDeadLetters } from './dead-letters.js';
import type { PublishOptions } from './envelope.js';
import { checkPublishOptions, dueAtOf } from './publish-options.js';
import { DelayedPublisher } from './scheduled-publish.js';
import { ClosedError, ConfigError, UnknownEventError, ValidationError } from './errors.js';
import type { EventInput, EventMap, EventName } from './events.js';
import { takeConsumerName } from './consumer-names.js';
import { waitIdle } from './idle.js';
import { readGroupCounts, type GroupCounts, type GroupCountsOptions } from './group-counts.js';
import { busLogger, childLogger, type Logger } from './logger.js';
import { LimitedLog } from './log-limit.js';
import { failureLog } from './failure-log.js';
import { Publisher } from './publisher.js';
import { resolveTransport } from './registry.js';
import { serializersFor, type Serializer } from './serializer.js';
import { compileJsonWriter, type JsonWriter } from './json-writer.js';
import { readerPlan, type ReaderPlan } from './json-reader.js';
import type { DeliveryHandler, Transport, TransportSubscription } from './transport.js';
import { compileTypeStates, raisePartitions, type TypeState } from './type-plans.js';
import { consumeCheck, type ConsumeCheck } from './consume-check.js';
import { registerBuiltinTransports } from './builtin-transports.js';
import type { DelayedPublishOptions, EventBusConfig, EventDeadLetter, EventHandler, IdleOptions, PublishManyOptions, SubscribeOptionsFor, Subscription } from './bus-types.js';

export class EventBus<M extends EventMap, T extends string = string> {
  private readonly types: Map<string, TypeState>;
  private readonly batcher: Batcher;
  private readonly publisher: Publisher;
  private readonly delayed: DelayedPublisher;
  private readonly subscriptions = new Set<Subscription>();
  /** Per type, the check `deadLetters` applies to stored events (made on first use). */
  private readonly deadChecks = new Map<string, ConsumeCheck | undefined>();
  private readonly startedAt = Date.now();
  private closedAt: number | undefined;
  /** Delivery failures logged per kind at a bounded rate (src/failure-log.ts). */
  private readonly limitedLog: LimitedLog;
  private closing: Promise<void> | undefined;

  /** @internal use {@link createEventBus} */
  constructor(
    readonly service: string,
    readonly events: M,
    readonly transport: Transport,
    private readonly config: ReturnType<typeof busConfigSchema.parse>,
    readonly logger: Logger,
    serializers: Map<string, Serializer> = serializersFor(events.schemas),
  ) {
    this.limitedLog = new LimitedLog(logger);
    const caps = transport.capabilities;
    this.batcher = new Batcher((units, settle) => transport.write(units, settle), batcherOptions(config.batching, caps));
    this.publisher = new Publisher(this.batcher, config.batching, caps);
    this.delayed = new DelayedPublisher(this.publisher, transport, logger);
    this.types = compileTypeStates(events, transport, serializers, this.publisher.room >= 0);
    transport.watchPartitions?.((type, partitions) => {
      const t = this.types.get(type);
      if (t !== undefined) raisePartitions(t, partitions);
    });
  }

  /**
   * Publishes one event. Resolves once the transport accepted it; rejects with a typed error otherwise.
   * Invalid names or payloads reject before anything is sent.
   * With `delayMs` or `deliverAt` the event is delivered no earlier than then, and the call resolves with its id
   * once it is scheduled (`cancelScheduled` takes it; docs/delayed-delivery.md).
   * @example await bus.publish('order.created', { orderId: 'o-1', amount: 10 }, { key: 'customer-7' });
   */
  publish<K extends EventName<M>>(type: K, data: EventInput<M, K>, options: PublishOptions & DelayedPublishOptions): Promise<string>;
  publish<K extends EventName<M>>(type: K, data: EventInput<M, K>, options?: PublishOptions): Promise<void>;
  publish<K extends EventName<M>>(type: K, data: EventInput<M, K>, options?: PublishOptions): Promise<void | string> {
    if (traced(publishChannel)) return tracedPublish(type, this.transport.type, 1, options, (o) => this.send(type, data, o));
    return this.send(type, data, options);
  }

  /** A refused call is told to `eventlane:publish-error` (`rejected`), here and in `sendMany` and `tryPublish`. */
  private send<K extends EventName<M>>(type: K, data: EventInput<M, K>, options: PublishOptions | undefined): Promise<void> {
    if (this.publisher.closed) return rejected(type, 1, new ClosedError());
    const t = this.types.get(type);
    if (t === undefined) return rejected(type, 1, new UnknownEventError(type, this.events.names));
    try {
      if (options === undefined) return this.publisher.enqueue(t, data, undefined, undefined, 0);
      const extra = checkPublishOptions('publish', options);
      const dueAt = dueAtOf(options);
      if (dueAt !== undefined) return this.delayed.publish(t, data, options, extra, dueAt) as Promise<unknown> as Promise<void>;
      return this.publisher.enqueue(t, data, options, options.key, extra);
    } catch (err) {
      return rejected(type, 1, err);
    }
  }

  /**
   * Publishes one event now, without waiting: true when the transport took it, false when it has no room
   * for it now (nothing was sent; `publish` would wait, or apply the transport's backpressure strategy).
   * Events published before it go first: a partition still waiting for room for them counts as full.
   * Invalid names or payloads throw, as `publish` rejects; so does a transport without a synchronous
   * write (`native` and `memory` have one, `redis-streams` does not).
   * @example if (!bus.tryPublish('tick.received', tick)) skipped++;
   */
  tryPublish<K extends EventName<M>>(type: K, data: EventInput<M, K>, options?: Omit<PublishOptions, 'delayMs' | 'deliverAt'>): boolean {
    try {
      return this.tryWrite(type, data, options);
    } catch (err) {
      throw refused(type, 1, err);
    }
  }

  private tryWrite<K extends EventName<M>>(type: K, data: EventInput<M, K>, options: PublishOptions | undefined): boolean {
    const pub = this.publisher;
    if (pub.closed) throw new ClosedError();
    const t = this.types.get(type);
    if (t === undefined) throw new UnknownEventError(type, this.events.names);
    if (this.transport.tryWrite === undefined) {
      throw new ConfigError(`The ${this.transport.type} transport has no synchronous write: use publish(), which waits for room.`);
    }
    const value = pub.parse(t, data, -1, options !== undefined ? checkPublishOptions('tryPublish', options) : 0);
    // Kept before flushing: a handler run inside that write (memory) may publish, and parse again.
    const json = pub.parsedJson;
    const size = pub.parsedSize;
    // What is buffered goes to the transport first (an in-process write completes now); if some of it
    // cannot, this event would overtake it.
    if (this.batcher.pendingEvents > 0 && !this.batcher.flushSync()) return false;
    const ev = pub.make(t, value, json, pub.metaOf(t, options), options?.key);
    const ok = this.transport.tryWrite({ type: t.name, partition: ev.partition, events: [ev], bytes: size });
    if (ok) this.batcher.countWritten();
    return ok;
  }

  /**
   * Publishes many events of one type. Every payload is validated before any is queued, so one bad
   * payload rejects the call and sends nothing. Resolves when all were accepted. With `delayMs` or `deliverAt`
   * they are delivered no earlier than then, and the call resolves with their ids, in payload order.
   */
  publishMany<K extends EventName<M>>(type: K, payloads: readonly EventInput<M, K>[], options: PublishManyOptions<EventInput<M, K>> & DelayedPublishOptions): Promise<string[]>;
  publishMany<K extends EventName<M>>(type: K, payloads: readonly EventInput<M, K>[], options?: PublishManyOptions<EventInput<M, K>>): Promise<void>;
  publishMany<K extends EventName<M>>(type: K, payloads: readonly EventInput<M, K>[], options?: PublishManyOptions<EventInput<M, K>>): Promise<void | string[]> {
    if (traced(publishChannel) && Array.isArray(payloads)) {
      return tracedPublish(type, this.transport.type, payloads.length, options as PublishOptions | undefined, (o) => this.sendMany(type, payloads, o as typeof options));
    }
    return this.sendMany(type, payloads, options);
  }

  private sendMany<K extends EventName<M>>(type: K, payloads: readonly EventInput<M, K>[], options: PublishManyOptions<EventInput<M, K>> | undefined): Promise<void> {
    const n = Array.isArray(payloads) ? payloads.length : 0;
    if (this.publisher.closed) return rejected(type, n, new ClosedError());
    const t = this.types.get(type);
    if (t === undefined) return rejected(type, n, new UnknownEventError(type, this.events.names));
    if (!Array.isArray(payloads)) return rejected(type, n, new ValidationError(`publishMany("${type}") expects an array of payloads.`, []));
    if (options != null && typeof options === 'object' && (options.delayMs !== undefined || options.deliverAt !== undefined)) return this.sendDelayed(t, payloads, options);
    return publishMany(this.publisher, t, payloads, options);
  }

  private sendDelayed(t: TypeState, payloads: readonly unknown[], options: PublishManyOptions<never>): Promise<void> {
    try {
      const extra = checkPublishOptions('publishMany', options);
      return this.delayed.publishMany(t, payloads, options, extra, dueAtOf(options)!) as Promise<unknown> as Promise<void>;
    } catch (err) {
      return rejected(t.name, payloads.length, err);
    }
  }

  /**
   * Removes a delayed event not yet due, by the id its publish resolved with: true when it did, false when there
   * was none such (already due and moved to its stream, cancelled, or not a delayed event of `type`).
   */
  cancelScheduled<K extends EventName<M>>(type: K, id: string): Promise<boolean> {
    if (!this.types.has(type)) return Promise.reject(new UnknownEventError(type, this.events.names));
    return this.delayed.cancel(type, id);
  }

  /**
   * Consumes `type` as a member of `options.group`.
   * @example await bus.subscribe('order.created', { group: 'billing', concurrency: 16 }, async (e) => charge(e.data));
   * The handler may be omitted when the transport runs handler modules itself (native: `{ workers, handler: url }`).
   */
  async subscribe<K extends EventName<M>>(type: K, options: SubscribeOptionsFor<T>, handler?: EventHandler<M, K>): Promise<Subscription> {
    if (this.closing) throw new ClosedError();
    const t = this.types.get(type);
    if (t === undefined) throw new UnknownEventError(type, this.events.names);
    if (typeof handler !== 'function' && (options as Record<string, unknown> | undefined)?.['handler'] === undefined) {
      throw new ConfigError(`subscribe("${type}") needs a handler function.`);
    }
    const o = parseConfig(subscribeOptionsSchema, options, 'subscribe options');
    const { group, consumer, concurrency, startFrom, maxDeliveries, retry, ...rest } = o;
    const taken = takeConsumerName(this.service, type, group, consumer, this.logger);
    const consumerName = taken.name;
    // Undefined when there is nothing to check: a plain type with validateOnConsume off.
    const check = consumeCheck(this.events, type, this.config.validateOnConsume);
    const wrapped: DeliveryHandler = (event, ctx) => {
      if (check !== undefined) check(event);
      return (handler as DeliveryHandler)(event, ctx);
    };
    let inner: TransportSubscription;
    try {
      inner = await this.transport.subscribe(
        {
          type,
          group,
          consumer: consumerName,
          concurrency,
          startFrom,
          maxDeliveries,
          backoff: retry.backoff,
          drainTimeoutMs: this.config.drainTimeoutMs,
          validateOnConsume: this.config.validateOnConsume,
          observer: failureLog(this.limitedLog, maxDeliveries),
          transport: this.transport.type,
          options: rest,
        },
        typeof handler === 'function' ? wrapped : (undefined as unknown as DeliveryHandler),
      );
    } catch (err) {
      taken.release();
      throw err;
    }
    let closed: Promise<void> | undefined;
    const sub: Subscription = {
      type,
      group,
      consumer: consumerName,
      health: (opts) => ({ type, group, consumer: consumerName, ...progressOf(inner, closed !== undefined, stallMsOf(opts)) }),
      close: () => {
        closed ??= inner.close().finally(() => {
          this.subscriptions.delete(sub);
          taken.release();
        });
        return closed;
      },
    };
    this.subscriptions.add(sub);
    return sub;
  }

  /**
   * Dead letters of `type` (optionally of one group), oldest first: events that exhausted
   * `maxDeliveries`, failed non-retryably, or could not be decoded; at most `limit` of them (the built-in
   * transports' default: 1000). Each is checked against the schema when read, whatever `validateOnConsume`
   * says: see {@link EventDeadLetter}. Transport-specific fields (Redis Streams' `ref`) are kept, untyped.
   */
  async deadLetters<K extends EventName<M>>(type: K, options: { group?: string; limit?: number } = {}): Promise<EventDeadLetter<M, K>[]> {
    const t = this.types.get(type);
    if (t === undefined) throw new UnknownEventError(type, this.events.names);
    return (await readDeadLetters(this.transport, t, this.deadLetterCheck(type), options)) as EventDeadLetter<M, K>[];
  }

  /** The consumer-side check with validation on, whatever `validateOnConsume` says: stored events may never have passed it. */
  private deadLetterCheck(type: string): ConsumeCheck | undefined {
    if (!this.deadChecks.has(type)) this.deadChecks.set(type, consumeCheck(this.events, type, true));
    return this.deadChecks.get(type);
  }

  /**
   * Publish counters: `events` handed to the transport (written or not: `failedEvents` of them failed),
   * batches, units, writes whose slot was freed while they waited on a slow node (`slotsFreed`); and events
   * buffered now.
   */
  stats(): { events: number; batches: number; units: number; failedEvents: number; slotsFreed: number; pendingEvents: number } {
    return { ...this.batcher.stats, pendingEvents: this.batcher.pendingEvents };
  }

  /**
   * Where each consumer group this bus subscribes (and each of `options.groups`) stands, in events: `lagEvents`
   * not yet delivered, `pendingEvents` delivered and not finished; `undefined` where the transport cannot tell.
   * Counts the whole group, whichever process its members are in. Cheap enough for a metrics scrape.
   * @example const [billing] = await bus.groupCounts(); // { type, group, lagEvents, pendingEvents }
   */
  groupCounts(options?: GroupCountsOptions<EventName<M>>): Promise<GroupCounts[]> {
    return readGroupCounts(this.transport, this.types, this.subscriptions, options);
  }

  /**
   * Sends everything buffered; resolves once each of those events was written or failed. It does not
   * reject: a failed event's own `publish` promise says so.
   */
  flush(): Promise<void> {
    return this.batcher.flushAll();
  }

  /**
   * Resolves once every consumer group this bus subscribes to (or those of `options.type`) has finished
   * every event written so far: handled it, or dead-lettered it; none queued, being handled or waiting for a
   * retry. Sends what is buffered first (`flush`). It counts the whole group, whichever process or bus its
   * members are in. Rejects with `TimeoutError` naming the groups still behind after `options.timeoutMs`.
   * Before `close()` of an in-process transport (memory, native) it keeps the events already published
   * from being dropped with the bus; in tests it waits for handlers without sleeping.
   * @example await bus.idle({ timeoutMs: 10_000 }); await bus.close();
   */
  async idle(options: IdleOptions<EventName<M>> = {}): Promise<void> {
    if (this.closing) throw new ClosedError();
    const o = parseConfig(idleOptionsSchema, options ?? {}, 'idle options');
    if (o.type !== undefined && !this.types.has(o.type)) throw new UnknownEventError(o.type, this.events.names);
    const transport = this.transport;
    if (transport.unfinished === undefined) throw new ConfigError(`The ${transport.type} transport cannot tell whether its consumer groups are idle.`);
    const watch = { transport, batcher: this.batcher, subscriptions: this.subscriptions, closed: () => this.closing !== undefined };
    await waitIdle(watch, o.type, o.timeoutMs ?? this.config.drainTimeoutMs);
  }

  /**
   * For a readiness or liveness probe, at once and with no round trip that can hang: whether the transport is
   * connected (since when, its last error) and each subscription's state and last delivery (src/health.ts).
   * `ok` is true when the transport is connected and every subscription runs.
   * @example const h = bus.health(); res.writeHead(h.ok ? 200 : 503).end(JSON.stringify(h));
   */
  health(options?: HealthOptions): BusHealth {
    const stallMs = stallMsOf(options);
    return busHealth(transportHealth(this.transport, this.startedAt, this.closedAt), this.subscriptions, stallMs);
  }

  /**
   * Sends what was published (up to `drainTimeoutMs`), drains in-flight handlers (acking them; up to
   * `drainTimeoutMs`), sends what they published meanwhile, then disconnects. Idempotent.
   */
  close(): Promise<void> {
    this.closedAt ??= Date.now();
    this.delayed.close();
    this.closing ??= closeBus({
      bus: this,
      publisher: this.publisher,
      subscriptions: this.subscriptions,
      transport: this.transport,
      drainTimeoutMs: this.config.drainTimeoutMs,
      logger: this.logger,
    });
    return this.closing;
  }
}

function jsonStringify(value: unknown): string {
  return JSON.stringify(value);
}

/**
 * Creates a bus. Validates the config (a `ConfigError` names the bad field), builds the transport
 * from the registry by `transport.type`, and connects it.
 * @example
 * const bus = await createEventBus({ service: 'checkout', events, transport: { type: 'memory' } });
 */
export async function createEventBus<M extends EventMap, T extends string = string>(config: EventBusConfig<M, T>): Promise<EventBus<M, T>> {
  registerBuiltinTransports();
  if (config === null || typeof config !== 'object') throw new ConfigError('createEventBus() expects a config object.');
  const { events, logger: givenLogger, ...rest } = config;
  if (!events || typeof events !== 'object' || !(events as EventMap).schemas || !(events as EventMap).names) {
    throw new ConfigError('config.events must be the result of defineEvents({...}).', [{ path: ['events'], message: 'not an event map' }]);
  }
  const parsed = parseConfig(busConfigSchema, rest, '');
  const logger = childLogger(busLogger(givenLogger), { lib: 'eventlane', service: parsed.service });
  const factory = await resolveTransport(parsed.transport.type);
  const serializers = serializersFor(events.schemas);
  const writers = new Map<string, JsonWriter | undefined>();
  const plans = new Map<string, ReaderPlan | undefined>();
  for (const name of events.names) {
    writers.set(name, compileJsonWriter(events.schemas[name]!));
    plans.set(name, readerPlan(events.schemas[name]!));
  }
  const transport = await factory(parsed.transport as Record<string, unknown>, {
    service: parsed.service,
    logger,
    eventTypes: events.names,
    serializer: (type) => serializers.get(type) ?? jsonStringify,
    jsonWriter: (type) => writers.get(type),
    readerPlan: (type) => plans.get(type),
  });
  await transport.connect();
  try {
    return new EventBus(parsed.service, events, transport, parsed, logger, serializers);
  } catch (err) {
    await transport.close();
    throw err;
  }
}
