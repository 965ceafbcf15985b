/**
 * The partition counts of a Redis Streams transport's event types, as recorded with the streams (topic-meta.ts).
 * At connect each declared type's count is recorded (the configured one, or 1) unless one is recorded already,
 * and a configured count that differs from the recorded one is refused. While the transport runs, the records
 * are read again every `partitionsCheckMs` (sooner when a subscription's reclaim pass is): a raised count is
 * handed to the listeners (the publisher, the consumers of the type, the bus).
 */
import { ConfigError, ConnectionError, describeError, EventlaneError, TransportError, type ValidationIssue } from '../../src/errors.js';
import type { Logger } from '../../src/logger.js';
import type { ResolvedConfig } from './config.js';
import { isConnectionProblem, type Client } from './connection.js';
import { metaKey, readRecorded, recordUnlessRecorded } from './topic-meta.js';

export type PartitionsListener = (type: string, partitions: number) => void;

export class TopicCounts {
  private readonly counts = new Map<string, number>();
  private readonly listeners: PartitionsListener[] = [];
  private readonly warnedLower = new Set<string>();
  private client: Client | undefined;
  private timer: NodeJS.Timeout | undefined;
  private periodMs: number;
  private refreshing = false;

  constructor(
    private readonly config: ResolvedConfig,
    private readonly logger: Logger,
  ) {
    this.periodMs = config.partitionsCheckMs;
  }

  /** The count the config gives the type (`topics[type].partitions`, else `partitions`); undefined when neither is set. */
  configured(type: string): number | undefined {
    return this.config.topics[type]?.partitions ?? this.config.partitions;
  }

  /** The type's count: recorded (as last read), else configured, else 1. */
  get(type: string): number {
    return this.counts.get(type) ?? this.configured(type) ?? 1;
  }

  /**
   * Records (or reads) the count of each type over `client`; a ConfigError, naming both counts, for each type
   * whose configured count differs from the recorded one. A Redis failure is a ConnectionError (Redis or a
   * Cluster master unreachable) or a TransportError, naming `address`.
   */
  async settle(client: Client, types: readonly string[], address: string): Promise<void> {
    const recorded = await Promise.all(types.map((t) => recordUnlessRecorded(client, this.config.prefix, t, this.configured(t) ?? 1))).catch((err: unknown) => {
      if (err instanceof EventlaneError) throw err;
      const what = `Cannot read or record the partition counts of the event types on ${address}: ${describeError(err)}`;
      throw isConnectionProblem(err) ? new ConnectionError(what, { cause: err }) : new TransportError(what, { cause: err });
    });
    const refused = types.flatMap((type, i) => {
      const mine = this.configured(type);
      return mine !== undefined && mine !== recorded[i] ? [{ type, mine, recorded: recorded[i]! }] : [];
    });
    if (refused.length > 0) throw this.mismatch(refused);
    types.forEach((t, i) => this.counts.set(t, recorded[i]!));
  }

  private mismatch(refused: { type: string; mine: number; recorded: number }[]): ConfigError {
    const issues: ValidationIssue[] = refused.map(({ type, mine, recorded }) => {
      const path = this.config.topics[type]?.partitions !== undefined ? ['transport', 'topics', type, 'partitions'] : ['transport', 'partitions'];
      const message =
        `${path.join('.')} is ${mine} for "${type}", but ${recorded} partitions are recorded for it on the transport (${metaKey(this.config.prefix, type)}): ` +
        `leave partitions unset for the type to use the recorded count, or set ${recorded}; to raise the count use admin.setPartitions("${type}", n) or ` +
        `eventlane-redis partitions ${type} <n> (a count is never lowered)`;
      return { path, message, code: 'custom' };
    });
    return new ConfigError(`Invalid transport: ${issues.map((i) => i.message).join('; ')}.`, issues);
  }

  /** Registers a listener of raised counts (called in registration order). */
  watch(listener: PartitionsListener): void {
    this.listeners.push(listener);
  }

  /** Reads the records again every `partitionsCheckMs` over `client`, until `stop`. */
  start(client: Client): void {
    this.client = client;
    this.schedule();
  }

  /** Reads them at least every `ms` (a subscription's reclaim cadence). */
  atLeastEvery(ms: number): void {
    if (ms >= this.periodMs) return;
    this.periodMs = ms;
    if (this.timer !== undefined) this.schedule();
  }

  private schedule(): void {
    clearInterval(this.timer);
    this.timer = setInterval(() => void this.refresh(), this.periodMs);
    this.timer.unref();
  }

  stop(): void {
    clearInterval(this.timer);
    this.timer = undefined;
  }

  /**
   * Reads the record of every type known here: a higher count is taken and handed to the listeners; a missing
   * record is written again with the count in use. Never rejects (a failed read is logged at debug).
   */
  async refresh(): Promise<void> {
    const client = this.client;
    if (client === undefined || this.refreshing) return;
    this.refreshing = true;
    try {
      await Promise.all([...this.counts].map(([type, current]) => this.refreshOne(client, type, current)));
    } finally {
      this.refreshing = false;
    }
  }

  private async refreshOne(client: Client, type: string, current: number): Promise<void> {
    try {
      const recorded = (await readRecorded(client, this.config.prefix, type)) ?? (await recordUnlessRecorded(client, this.config.prefix, type, current));
      if (recorded > current) return this.raised(type, recorded);
      if (recorded < current && !this.warnedLower.has(type)) {
        this.warnedLower.add(type);
        this.logger.warn({ type, recorded, partitions: current }, `the recorded partition count of "${type}" is below the one in use; keeping ${current} (counts are only raised)`);
      }
    } catch (err) {
      this.logger.debug({ err: describeError(err), type }, 'reading the recorded partition count failed');
    }
  }

  private raised(type: string, partitions: number): void {
    const from = this.counts.get(type);
    this.counts.set(type, partitions);
    this.logger.info({ type, from, partitions }, `the partition count of "${type}" was raised; routing and reading over ${partitions} partitions`);
    for (const listener of this.listeners) {
      try {
        listener(type, partitions);
      } catch (err) {
        this.logger.error({ err: describeError(err), type }, 'a listener of raised partition counts failed');
      }
    }
  }
}
