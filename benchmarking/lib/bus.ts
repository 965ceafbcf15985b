/**
 * Building buses for scenarios, and checking up front that a transport is registered and loadable.
 */
import { createEventBus, registeredTransports, type BatchingConfig, type EventBus } from '../../src/index.js';
import { registerBuiltinTransports } from '../../src/builtin-transports.js';
import { resolveTransport } from '../../src/registry.js';
import { UsageError } from './config.js';
import { benchEvents } from './payload.js';
import type { BenchConfig, TransportName } from './types.js';

export type BenchBus = EventBus<typeof benchEvents>;

/** The registered transport type behind a CLI transport name. */
export function transportType(name: TransportName): string {
  return name === 'redis' ? 'redis-streams' : name;
}

/** Throws a one-line UsageError when the transport is not registered yet or fails to load. */
export async function assertTransportAvailable(name: TransportName): Promise<void> {
  registerBuiltinTransports();
  const type = transportType(name);
  if (!registeredTransports().includes(type)) {
    throw new UsageError(`Transport "${name}" is not available in this build yet (registered: ${registeredTransports().join(', ')}).`);
  }
  try {
    await resolveTransport(type);
  } catch (err) {
    throw new UsageError(`Transport "${name}" failed to load: ${firstLine(err)}`);
  }
}

export async function transportAvailable(name: TransportName): Promise<boolean> {
  try {
    await assertTransportAvailable(name);
    return true;
  } catch {
    return false;
  }
}

/** The in-process transport of the default suite: native when registered and loadable, else memory. */
export async function inProcessTransport(): Promise<TransportName> {
  return (await transportAvailable('native')) ? 'native' : 'memory';
}

/** The transport block for a config; `extra` is scenario-specific, `--transport-option` wins over both. */
export function transportBlock(config: BenchConfig, extra: Record<string, unknown> = {}): { type: string; [k: string]: unknown } {
  const block: { type: string; [k: string]: unknown } = { type: transportType(config.transport) };
  if (config.transport !== 'noop' || config.partitions > 1) block['partitions'] = config.partitions;
  if (config.transport === 'redis') {
    block['url'] = config.redisUrl;
    block['prefix'] = config.keyPrefix;
  }
  return { ...block, ...extra, ...config.transportOptions };
}

export function batching(config: BenchConfig, extra: BatchingConfig = {}): BatchingConfig {
  return { maxEvents: config.batchSize, maxWaitMs: config.flushInterval, ...extra };
}

export async function benchBus(
  config: BenchConfig,
  opts: { transport?: Record<string, unknown>; batching?: BatchingConfig; validateOnConsume?: boolean } = {},
): Promise<BenchBus> {
  return createEventBus({
    service: 'bench',
    events: benchEvents,
    transport: transportBlock(config, opts.transport),
    batching: batching(config, opts.batching),
    validateOnConsume: opts.validateOnConsume ?? true,
  });
}

export function firstLine(err: unknown): string {
  const msg = err instanceof Error ? err.message : String(err);
  return (msg.split('\n')[0] ?? '').trim() || (err instanceof Error ? err.name : 'error');
}
