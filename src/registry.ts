/**
 * Transport registry: `createEventBus` looks up `transport.type` here. Built-in transports register
 * themselves lazily (their modules load only when used); third parties call `registerTransport`.
 */
import { ConfigError, UnknownTransportError } from './errors.js';
import type { TransportFactory } from './transport.js';

type Loader = () => Promise<TransportFactory>;

const factories = new Map<string, Loader>();

/**
 * Registers a transport under `type`. Registering a type twice replaces it.
 * @example registerTransport('kafka', (config, ctx) => new KafkaTransport(config, ctx));
 */
export function registerTransport(type: string, factory: TransportFactory): void {
  if (!/^[a-z][a-z0-9-]*$/.test(type)) throw new ConfigError(`Transport type "${type}" must be lowercase letters, digits and '-'.`);
  factories.set(type, () => Promise.resolve(factory));
}

/** Registers a built-in transport whose module is imported on first use. */
export function registerLazyTransport(type: string, load: Loader): void {
  factories.set(type, load);
}

export function registeredTransports(): string[] {
  return [...factories.keys()];
}

export async function resolveTransport(type: string): Promise<TransportFactory> {
  const load = factories.get(type);
  if (!load) throw new UnknownTransportError(type, registeredTransports());
  return load();
}
