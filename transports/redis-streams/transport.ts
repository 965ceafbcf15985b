/**
 * The Redis Streams transport: wires config, connections, the publisher, consumers and admin ops.
 */
import { logConnectionState } from './connection-log.js';
import { ConnectionHealth } from './connection-health.js';
import type { TransportHealth } from '../../src/health.js';
import { ClosedError, ConfigError, ConnectionError } from '../../src/errors.js';
import { silentLogger } from '../../src/logger.js';
import { parseConfig } from '../../src/config.js';
import type { GroupCounts, GroupTarget } from '../../src/group-counts.js';
import type { DeliveryHandler, PublishUnit, SubscriptionSpec, Transport, TransportCapabilities, TransportContext, TransportSubscription, WriteResult, WriteSettlement } from '../../src/transport.js';
import { RedisStreamsAdmin, type RedisDeadLetter } from './admin.js';
import { redisStreamsConfigSchema, resolveSubscribeOptions, type ResolvedConfig } from './config.js';
import { Connector, type Client } from './connection.js';
import { jsonReader } from '../../src/json-reader.js';
import { RedisConsumer } from './consumer.js';
import { Publisher } from './publisher.js';
import { ServerClock } from './server-clock.js';
import { TopicCounts } from './topic-counts.js';
import { RedisScheduling } from './delayed.js';
import type { TransportScheduling } from '../../src/scheduling.js';

export class RedisStreamsTransport implements Transport {
  readonly type = 'redis-streams';
  readonly capabilities: TransportCapabilities;
  readonly connector: Connector;
  private pool: Client[] = [];
  private command: Client | undefined;
  private publisher: Publisher | undefined;
  private adminOps: RedisStreamsAdmin | undefined;
  private readonly consumers = new Set<RedisConsumer>();
  private connecting: Promise<void> | undefined;
  private closed = false;
  private closing: Promise<void> | undefined;
  private readonly connections = new ConnectionHealth();
  /** The types' partition counts, as recorded with their streams (topic-counts.ts). */
  private readonly counts: TopicCounts;
  private delayed: RedisScheduling | undefined;
  /** Delayed delivery in sorted sets, moved to the streams by every bus on the type (delayed.ts). */
  readonly scheduling: TransportScheduling = {
    schedule: async (events, dueAt) => (await this.delayedEvents()).schedule(events, dueAt),
    cancel: async (type, id) => (await this.delayedEvents()).cancel(type, id),
  };

  constructor(
    readonly config: ResolvedConfig,
    private readonly ctx: TransportContext,
  ) {
    this.connector = new Connector(config, (client, role) => {
      logConnectionState(client, role, this.connector.address, ctx.logger);
      this.connections.watch(client);
    });
    // Payloads are encoded per write with the bus's compiled serializer (nothing but the payload object
    // waits in a batch); the bus still checks sizes at publish against maxEventBytes.
    // Up to 32 writes in flight per pool connection, pipelined: concurrent unbatched publishers then share
    // round trips the way ioredis auto-pipelining does.
    // Per-event entries: each event is its own XADD, and Redis may take some of a pipeline's and refuse others
    // (OOM at maxmemory): a unit per event, so a publish that was stored never rejects (and is not retried).
    const form: Pick<TransportCapabilities, 'input' | 'units'> = config.entryMode === 'event' ? { units: { maxEvents: 1 } } : { input: { kind: 'runs' } };
    this.capabilities = { encoding: 'none', maxInFlight: config.pool.size * 32, maxEventBytes: config.maxEventBytes, ...form };
    this.counts = new TopicCounts(config, ctx.logger);
    // The publisher and the consumers first, so that the bus (a later listener) routes only to streams they know.
    this.counts.watch((type, partitions) => {
      this.publisher?.grow(type, partitions);
      for (const c of this.consumers) if (c.spec.type === type) c.follow(partitions);
    });
  }

  /** Opens the publish pool and the command connection; rejects with `ConnectionError` naming the address. */
  connect(): Promise<void> {
    if (this.closed) return Promise.reject(new ClosedError('redis-streams transport'));
    this.connecting ??= this.doConnect();
    return this.connecting;
  }

  private async doConnect(): Promise<void> {
    if (this.closed) throw new ClosedError('redis-streams transport');
    const onError = (err: Error): void => this.ctx.logger.debug({ err: err.message }, 'redis connection error');
    const clients = Array.from({ length: this.config.pool.size + 1 }, (_, i) => this.connector.create(i === this.config.pool.size ? 'command' : 'publish'));
    for (const c of clients) c.on('error', onError);
    const results = await Promise.allSettled(clients.map((c) => this.connector.connect(c)));
    const failed = results.find((r) => r.status === 'rejected') as PromiseRejectedResult | undefined;
    try {
      if (failed) {
        throw failed.reason instanceof ConnectionError || failed.reason instanceof ConfigError
          ? failed.reason
          : new ConnectionError(`Cannot connect to ${this.connector.address}`, { cause: failed.reason });
      }
      await this.connector.checkNotClusterNode(clients[clients.length - 1]!);
      // Each declared type's partition count is agreed with the streams before the bus routes a single event.
      await this.counts.settle(clients[clients.length - 1]!, this.ctx.eventTypes, this.connector.address);
    } catch (err) {
      for (const c of clients) c.disconnect();
      this.connecting = undefined;
      throw err;
    }
    this.command = clients.pop()!;
    this.pool = clients;
    const clock = new ServerClock(this.command, this.ctx.logger);
    // Trimming by age needs Redis's clock before the first write (server-clock.ts).
    if (this.config.minIdAgeMs !== undefined || Object.values(this.config.topics).some((t) => t.minIdAgeMs !== undefined)) await clock.sync();
    this.publisher = new Publisher(
      this.config,
      this.connector,
      this.pool,
      this.ctx.service,
      clock,
      (type) => this.counts.get(type),
      (type) => this.ctx.serializer(type),
      (type) => this.ctx.jsonWriter?.(type),
    );
    this.delayed = new RedisScheduling(
      this.config,
      this.command,
      clock,
      this.ctx.service,
      (t) => this.partitionsFor(t),
      (t) => this.ctx.serializer(t),
      this.ctx.logger,
    );
    this.adminOps = new RedisStreamsAdmin(this.command, this.config, (t) => this.partitionsFor(t));
    this.counts.start(this.command);
  }

  /** The type's partition count, as recorded with its streams (agreed at connect, followed while running). */
  partitionsFor(type: string): number {
    return this.counts.get(type);
  }

  /** The bus follows a raised count (`admin.setPartitions`), read again every `partitionsCheckMs`. */
  watchPartitions(listener: (type: string, partitions: number) => void): void {
    this.counts.watch(listener);
  }

  write(units: readonly PublishUnit[], settle: WriteSettlement): Promise<WriteResult> {
    if (this.closed) return Promise.reject(new ClosedError('redis-streams transport'));
    if (this.publisher === undefined) return this.connect().then(() => this.publisher!.write(units, settle));
    return this.publisher.write(units, settle);
  }

  async subscribe(spec: SubscriptionSpec, handler: DeliveryHandler): Promise<TransportSubscription> {
    if (this.closed) throw new ClosedError('redis-streams transport');
    const opts = resolveSubscribeOptions(spec.options, spec.concurrency, this.config);
    await this.connect();
    this.counts.atLeastEvery(opts.reclaimIntervalMs);
    const consumer = new RedisConsumer(spec, opts, handler, this.config, this.connector, this.command!, this.partitionsFor(spec.type), this.ctx.logger, jsonReader(this.ctx.readerPlan?.(spec.type)));
    await consumer.start();
    this.delayed!.mover.track(spec.type);
    this.consumers.add(consumer);
    consumer.follow(this.partitionsFor(spec.type)); // a raise read while it started
    return {
      close: async () => {
        await consumer.close();
        this.consumers.delete(consumer);
      },
      health: (stallMs) => consumer.health(stallMs),
    };
  }

  private async delayedEvents(): Promise<RedisScheduling> {
    if (this.closed) throw new ClosedError('redis-streams transport');
    await this.connect();
    return this.delayed!;
  }

  /** Operations API (streams, groups, pending, DLQ). Connects on first use. */
  async admin(): Promise<RedisStreamsAdmin> {
    await this.connect();
    return this.adminOps!;
  }

  async deadLetters(type: string, group?: string, limit?: number): Promise<RedisDeadLetter[]> {
    return (await this.admin()).deadLetters(type, group, limit);
  }

  /** `bus.idle()`: see RedisStreamsAdmin.unfinished. */
  async unfinished(type: string, group: string): Promise<number> {
    return (await this.admin()).unfinished(type, group);
  }

  /** `bus.groupCounts()`: in events, sampled past a bound (see RedisStreamsAdmin.groupEvents); `estimated` says when. */
  async groupCounts(targets: readonly GroupTarget[]): Promise<GroupCounts[]> {
    const admin = await this.admin();
    return Promise.all(targets.map(async ({ type, group, partitions }) => ({ type, group, ...(await admin.withPartitions(type, partitions).groupEvents(type, group)) })));
  }

  /** Idempotent: a second call resolves when the first has closed everything, not at once. */
  /** Whether every connection is up, since when, and the last error a connection reported (no round trip). */
  health(): Omit<TransportHealth, 'type'> {
    return this.connections.report();
  }

  close(): Promise<void> {
    this.closing ??= this.doClose();
    return this.closing;
  }

  private async doClose(): Promise<void> {
    this.closed = true;
    this.counts.stop();
    this.delayed?.mover.close();
    await Promise.allSettled([...this.consumers].map((c) => c.close()));
    this.consumers.clear();
    await this.connecting?.catch(() => undefined);
    this.publisher?.close();
    await Promise.allSettled([...this.pool, ...(this.command ? [this.command] : [])].map((c) => this.quit(c)));
    for (const c of this.pool) c.disconnect();
    this.command?.disconnect();
    this.pool = [];
    this.command = undefined;
  }

  /**
   * QUIT lets the replies still owed arrive first; a stalled server (which never answers it: publish
   * connections have no command timeout) is dropped after commandTimeoutMs instead of holding close() forever.
   */
  private quit(c: Client): Promise<void> {
    return new Promise<void>((resolve) => {
      const timer = setTimeout(() => {
        c.disconnect();
        resolve();
      }, this.config.commandTimeoutMs);
      const done = (): void => {
        clearTimeout(timer);
        resolve();
      };
      c.quit().then(done, () => {
        c.disconnect();
        done();
      });
    });
  }
}

/** Factory registered as `redis-streams`. Validates the block; a `ConfigError` names the field. */
export function createRedisStreamsTransport(config: Record<string, unknown>, ctx: TransportContext): RedisStreamsTransport {
  const resolved = parseConfig(redisStreamsConfigSchema, config, 'transport');
  // A typo in a topic's name leaves its type on the defaults without a word. Not an error: one config may be
  // shared by services that declare different events (it keeps their partition counts in agreement).
  const unknown = ctx.eventTypes.length === 0 ? [] : Object.keys(resolved.topics).filter((t) => !ctx.eventTypes.includes(t));
  if (unknown.length > 0) {
    ctx.logger.warn({ topics: unknown, declared: ctx.eventTypes }, 'transport.topics names event types this bus does not declare; their settings do not apply here');
  }
  return new RedisStreamsTransport(resolved, ctx);
}

/**
 * Operations access without a bus (scripts, CLIs): connects with the same config block as the bus's
 * `transport` and returns the admin API. Call `close()` when done.
 * @example const { admin, close } = await openRedisStreamsAdmin({ type: 'redis-streams', url, partitions: 4 });
 */
export async function openRedisStreamsAdmin(config: Record<string, unknown>): Promise<{ admin: RedisStreamsAdmin; close: () => Promise<void> }> {
  const t = createRedisStreamsTransport(
    { type: 'redis-streams', ...config, pool: { size: 1 } },
    { service: 'eventlane-admin', logger: silentLogger, eventTypes: [], serializer: () => JSON.stringify },
  );
  await t.connect();
  return { admin: await t.admin(), close: () => t.close() };
}
