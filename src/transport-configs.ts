/**
 * The types of `createEventBus`'s `transport` block, by `type`: a built-in transport's block is checked at
 * compile time (a misspelt option, a wrong value), as its factory checks it at run time. A transport
 * registered with `registerTransport` takes any options unless it declares its block:
 *
 * ```ts
 * declare module 'eventlane' {
 *   interface TransportConfigs {
 *     'my-queue': { type: 'my-queue'; url: string };
 *   }
 * }
 * ```
 */
import type { MemoryTransportConfig } from '../transports/memory/index.js';
import type { NativeSubscribeOptions, NativeTransportConfig } from '../transports/native/config.js';
import type { NoopTransportConfig } from '../transports/noop/index.js';
import type { RedisStreamsConfig, RedisSubscribeOptions } from '../transports/redis-streams/config.js';

/** Config blocks by transport type; open to declaration merging. */
export interface TransportConfigs {
  memory: MemoryTransportConfig;
  noop: NoopTransportConfig;
  native: NativeTransportConfig;
  'redis-streams': RedisStreamsConfig;
}

/**
 * The `transport` block of type `T`: the declared block of a known type, otherwise any options (a transport
 * that declared none; `T` is `string` when the block's type is not a literal, e.g. a config read at run time).
 */
export type TransportBlock<T extends string = string> = { type: T } & (T extends keyof TransportConfigs ? TransportConfigs[T] : { [option: string]: unknown });

/**
 * Each transport's own `subscribe` options, by type (next to `CommonSubscribeOptions`); open to declaration
 * merging as `TransportConfigs` is. A bus whose transport type is declared here types `subscribe`'s options
 * exactly (`SubscribeOptionsFor`).
 */
export interface TransportSubscribeOptions {
  /** The memory transport takes only the common options. */
  memory: Record<never, never>;
  /** The noop transport cannot be subscribed to (`subscribe` rejects with a `ConfigError`). */
  noop: Record<never, never>;
  native: NativeSubscribeOptions;
  'redis-streams': RedisSubscribeOptions;
}
