/**
 * The records one subscription of the Redis Streams transport keeps (consumer.ts and its parts): the
 * context they share, the streams read, the entries held, and the reply shapes of the commands they send.
 */
import type { EventEnvelope } from '../../src/envelope.js';
import type { Logger } from '../../src/logger.js';
import type { DeliveryContext, SubscriptionSpec } from '../../src/transport.js';
import type { ResolvedConfig, ResolvedSubscribeOptions } from './config.js';
import type { Client, Connector } from './connection.js';

export type RawEntry = [string, string[] | null];
export type ReadReply = [string, RawEntry[]][] | null;

/** Loose command surface shared by Redis and Cluster (ioredis' typings do not cover variadic calls well). */
export interface Cmd {
  xdel(key: string, ...ids: string[]): Promise<number>;
  xadd(key: string, ...args: (string | number)[]): Promise<string>;
  xgroup(...args: (string | number)[]): Promise<unknown>;
  exists(key: string): Promise<number>;
  xautoclaim(...args: (string | number)[]): Promise<[string, RawEntry[], string[]?]>;
  xpending(...args: (string | number)[]): Promise<unknown>;
  xinfo(...args: string[]): Promise<unknown[][] | null>;
}

/** What the parts of one subscription share. */
export interface ConsumerContext {
  readonly spec: SubscriptionSpec;
  readonly opts: ResolvedSubscribeOptions;
  readonly config: ResolvedConfig;
  readonly connector: Connector;
  /** The command connection, and the same with the loose typing of `Cmd`. */
  readonly command: Client;
  readonly cmd: Cmd;
  readonly logger: Logger;
  /** Every stream read, by index: per partition, its stream and then the group's retry stream. */
  readonly streams: StreamInfo[];
  /** Set once, when close() begins. */
  closing: boolean;
  /** Resolves when close() begins. */
  readonly closeSignal: Promise<void>;
}

export class Entry {
  cursor = 0;
  remaining: number;
  abandoned = false;
  claimedAt: number;
  /** Its delivery count when it came here (1 for a new entry), when known. */
  deliveries: number | undefined = 1;
  /** Set while a serial pending drain waits for this entry. */
  done: (() => void) | undefined = undefined;
  constructor(
    readonly stream: number,
    readonly id: string,
    readonly events: EventEnvelope[],
    readonly ctx: DeliveryContext,
    readonly attempt: number,
  ) {
    this.remaining = events.length;
    this.claimedAt = Date.now();
  }
}

export interface StreamInfo {
  key: string;
  partition: number;
  retry: boolean;
  /** XAUTOCLAIM cursor. */
  cursor: string;
  acks: string[];
  /** Request bytes every XACK of this stream by this group starts with (`xackHead`). */
  ackHead: Buffer;
  /** Retry stream: acked entries whose XDEL failed, deleted again with the next acks. */
  deletes: string[];
  /** Entries trimmed before the group read them, as last reported (0 once the group is past the gap). */
  trimmedSeen: number;
  /**
   * Entries found trimmed while pending and not reported yet: the serial pending drain and a reclaim pass
   * (XAUTOCLAIM, XCLAIM of suspects) meet them one at a time and report the count once, when they end.
   */
  trimmedUnreported: number;
}

export function noop(): void {}
