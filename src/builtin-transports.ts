/**
 * Built-in transports, registered lazily: a transport's module (and its dependencies, e.g. ioredis)
 * loads only when a bus uses it.
 */
import { registerLazyTransport, registeredTransports } from './registry.js';

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
