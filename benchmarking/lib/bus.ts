/**
 * Building buses for scenarios, and checking up front that a transport is registered and loadable.
 */
import { createEventBus, registeredTransports, registerTransport, type BatchingConfig, type EventBus } from '../../src/index.js';
import { parseConfig } from '../../src/config.js';
import { registerBuiltinTransports } from '../../src/builtin-transports.js';
import { resolveTransport } from '../../src/registry.js';
import type { z } from 'zod';
import { memoryConfigSchema } from '../../transports/memory/memory-transport.js';
import { nativeConfigSchema } from '../../transports/native/config.js';
import { noopConfigSchema } from '../../transports/noop/index.js';
import { redisStreamsConfigSchema } from '../../transports/redis-streams/config.js';
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

/** The built-in transports' config schemas, to check `--transport-option`s before any child runs. */
const SCHEMAS: Record<TransportName, z.ZodType> = {
  memory: memoryConfigSchema,
  noop: noopConfigSchema,
  native: nativeConfigSchema,
  redis: redisStreamsConfigSchema,
};

/**
 * Throws a one-line UsageError when a `--transport-option` is not an option of the transport or has a bad
 * value (a misspelt key forked every iteration's child to fail there).
 */
export function assertTransportOptions(config: BenchConfig): void {
  const given = Object.keys(config.transportOptions);
  const schema = SCHEMAS[config.transport];
  if (given.length === 0 || schema === undefined) return;
  const res = schema.safeParse(transportBlock(config));
  if (res.success) return;
  const bad = res.error.issues.flatMap((i) => {
    const keys = i.code === 'unrecognized_keys' ? i.keys.map((k) => [...i.path, k]) : [i.path];
    return keys.filter((path) => given.includes(String(path[0]))).map((path) => `${path.join('.')}: ${i.code === 'unrecognized_keys' ? 'not an option of the transport' : i.message}`);
  });
  if (bad.length > 0) throw new UsageError(`--transport-option for ${config.transport}: ${bad.join('; ')}`);
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

/**
 * The transport type of a native transport whose worker consumers spin `spinUs` on an empty ring before they
 * sleep on the futex: not a transport option, so the benchmark builds that transport itself (registered under a
 * type of its own, the config block otherwise the native one's).
 */
export function spinningNativeType(spinUs: number): string {
  const type = `native-spin-${spinUs}`;
  if (!registeredTransports().includes(type)) {
    registerTransport(type, async (config, ctx) => {
      const { NativeTransport } = await import('../../transports/native/native-transport.js');
      return new NativeTransport(parseConfig(nativeConfigSchema, { ...config, type: 'native' }, 'transport'), ctx, { spinUs });
    });
  }
  return type;
}

export function batching(config: BenchConfig, extra: BatchingConfig = {}): BatchingConfig {
  return { maxEvents: config.batchSize, maxWaitMs: config.flushInterval, ...extra };
}

export async function benchBus(config: BenchConfig, opts: { transport?: Record<string, unknown>; batching?: BatchingConfig; validateOnConsume?: boolean } = {}): Promise<BenchBus> {
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
