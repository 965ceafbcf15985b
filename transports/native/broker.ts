/**
 * The state every native transport opened with the same `name` in this process shares (`Broker`): the
 * partition core and, per event type, a `Topic` (its consumer groups, the retained history of each
 * partition and the cells where consumer threads say they wait). `openBroker` creates it on first use and
 * refuses a transport whose config cannot share it; `releaseBroker` says when the last one let go.
 */
import { SharedBrokers } from '../../src/shared-brokers.js';
import { ConfigError, NativeError } from '../../src/errors.js';
import type { TransportContext } from '../../src/transport.js';
import { createCore, type PartitionCore } from '../../native/loader.js';
import type { ResolvedNativeConfig } from './config.js';
import type { NativeGroup } from './group.js';
import { History } from './history.js';

export class Topic {
  readonly groups = new Map<string, NativeGroup>();
  /** The type's partitions, set by the bus that created the topic. */
  readonly partitions: number;
  /** Per partition; empty when nothing is retained. */
  readonly history: History[];
  /** Per partition: consumer threads (of any group) blocked waiting for its events, then their waits (wait-probe.ts). */
  readonly waiting: Int32Array;
  /** @param maxLen Events kept per partition for groups created later from '0'. */
  constructor(partitions: number, maxLen: number) {
    this.partitions = partitions;
    this.history = maxLen > 0 ? Array.from({ length: partitions }, () => new History(maxLen)) : [];
    this.waiting = new Int32Array(new SharedArrayBuffer(8 * partitions));
  }
}

/** State shared by every transport opened with the same `name` in this process. */
export interface Broker {
  readonly core: PartitionCore;
  readonly topics: Map<string, Topic>;
  /** The service of the bus that opened it: the `source` of records that do not name another. */
  readonly service: string;
}

const brokers = new SharedBrokers<Broker>();

/** The largest event a core takes: a quarter of its ring's arena. */
export function maxEventBytesOf(core: PartitionCore): number {
  return Math.floor(core.arenaBytes / 4);
}

/**
 * The broker of `config.name` (a new one for a new name, or none), checked against `config`: its arena must take
 * events of `maxEventBytes`. A transport it refuses holds no reference to it. (Partition counts are per type,
 * checked at connect.)
 */
export function openBroker(config: ResolvedNativeConfig, ctx: TransportContext): Broker {
  const broker = brokers.acquire(config.name, () => newBroker(config, ctx));
  const limit = maxEventBytesOf(broker.core);
  if (config.maxEventBytes !== undefined && config.maxEventBytes > limit) {
    // Refused, not capped: a capped limit would refuse an event between the two naming maxEventBytes, which allows it.
    // Only a broker opened by another transport gets here: a new one's arena is sized for its maxEventBytes.
    brokers.release(config.name);
    const message = `maxEventBytes ${config.maxEventBytes} is above a quarter of the ring arena of native broker "${config.name}" (${broker.core.arenaBytes} bytes: at most ${limit}), sized by the transport that opened it; give that one a maxEventBytes of at least ${config.maxEventBytes}, or lower this one`;
    throw new ConfigError(`Invalid transport: ${message}.`, [{ path: ['transport', 'maxEventBytes'], message, code: 'custom' }]);
  }
  return broker;
}

/** Lets go of the broker of `name`; true when this was its last transport (its core is then to be closed). */
export function releaseBroker(name: string | undefined): boolean {
  return brokers.release(name);
}

function newBroker(config: ResolvedNativeConfig, ctx: TransportContext): Broker {
  const arena = config.arenaBytes;
  let core: PartitionCore;
  try {
    core = createCore(config.capacity, arena, config.implementation, (msg) => {
      ctx.logger.warn({ transport: 'native' }, msg);
      process.emitWarning(msg, { code: 'EVENTLANE_NATIVE_FALLBACK' });
    });
  } catch (err) {
    throw new NativeError(`Cannot create the native partition core: ${(err as Error).message}`, { cause: err });
  }
  return { core, topics: new Map(), service: ctx.service };
}
