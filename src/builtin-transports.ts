/**
 * The one core file that knows the built-in transports: it registers them lazily (a transport's module, and
 * its dependencies such as ioredis, loads only when a bus uses it) and declares their config blocks.
 */
import { registerLazyTransport, registeredTransports } from './registry.js';
import type { MemoryTransportConfig } from '../transports/memory/index.js';
import type { NativeSubscribeOptions, NativeTransportConfig } from '../transports/native/config.js';
import type { NoopTransportConfig } from '../transports/noop/index.js';
import type { RedisStreamsConfig, RedisSubscribeOptions } from '../transports/redis-streams/config.js';

export type { MemoryTransportConfig };

declare module './transport-configs.js' {
  /** The built-in transports' config blocks. */
  interface TransportConfigs {
    memory: MemoryTransportConfig;
    noop: NoopTransportConfig;
    native: NativeTransportConfig;
    'redis-streams': RedisStreamsConfig;
  }
  /** The built-in transports' own `subscribe` options. */
  interface TransportSubscribeOptions {
    /** The memory transport takes only the common options. */
    memory: Record<never, never>;
    /** The noop transport cannot be subscribed to (`subscribe` rejects with a `ConfigError`). */
    noop: Record<never, never>;
    native: NativeSubscribeOptions;
    'redis-streams': RedisSubscribeOptions;
  }
}

let done = false;

export function registerBuiltinTransports(): void {
  if (done) return;
  done = true;
  const have = new Set(registeredTransports());
  const builtins: Record<string, () => Promise<import('./transport.js').TransportFactory>> = {
    memory: () => import('../transports/memory/index.js').then((m) => m.createMemoryTransport),
    noop: () => import('../transports/noop/index.js').then((m) => m.createNoopTransport),
    native: () => import('../transports/native/index.js').then((m) => m.createNativeTransport),
    'redis-streams': () => import('../transports/redis-streams/index.js').then((m) => m.createRedisStreamsTransport),
  };
  for (const [type, load] of Object.entries(builtins)) if (!have.has(type)) registerLazyTransport(type, load);
}
