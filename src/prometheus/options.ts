/**
 * The options of `eventlaneMetrics` and what a bus must offer to be read at scrape time, with their checks
 * (a `ConfigError` names the bad option) and defaults.
 */
import type { Registry } from 'prom-client';
import { ConfigError } from '../errors.js';
import type { GroupCounts } from '../group-counts.js';

/** What the collector reads of a bus at scrape time: an `EventBus` is one. */
export interface MeteredBus {
  stats(): { readonly pendingEvents: number };
  groupCounts(): Promise<readonly GroupCounts[]>;
}

export interface EventlaneMetricsOptions {
  /** The prom-client registry the metrics are registered on. @default prom-client's global `register` */
  registry?: Registry | undefined;
  /** Buses read at scrape time (buffered events, group lag and pending); more with `addBus`. @default [] */
  buses?: readonly MeteredBus[] | undefined;
  /**
   * Bucket bounds, in seconds, of `eventlane_handler_duration_seconds` and `eventlane_publish_duration_seconds`.
   * @default [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10]
   */
  durationBuckets?: readonly number[] | undefined;
  /** Bucket bounds, in events, of `eventlane_batch_events`. @default [1, 2, 5, 10, 25, 50, 100, 250, 500, 1000, 2500, 5000] */
  batchBuckets?: readonly number[] | undefined;
}

export const DURATION_BUCKETS: readonly number[] = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];
export const BATCH_BUCKETS: readonly number[] = [1, 2, 5, 10, 25, 50, 100, 250, 500, 1000, 2500, 5000];

/** The options with their defaults (the registry is resolved by the caller, which imports prom-client). */
export interface CheckedOptions {
  readonly registry: Registry | undefined;
  readonly buses: readonly MeteredBus[];
  readonly durationBuckets: number[];
  readonly batchBuckets: number[];
}

function fail(path: string, message: string): never {
  throw new ConfigError(`eventlaneMetrics: ${path} ${message}.`, [{ path: path.split('.'), message }]);
}

/** `bus`, when it is one the collector can read; else a ConfigError naming `path`. */
export function checkBus(bus: unknown, path: string): MeteredBus {
  const b = bus as Partial<MeteredBus> | null;
  if (b === null || typeof b !== 'object' || typeof b.stats !== 'function' || typeof b.groupCounts !== 'function') {
    fail(path, 'must be an event bus (from createEventBus), with stats() and groupCounts()');
  }
  return b as MeteredBus;
}

function buckets(value: unknown, path: string, fallback: readonly number[]): number[] {
  if (value === undefined) return [...fallback];
  if (!Array.isArray(value) || value.length === 0) fail(path, 'must be a non-empty array of numbers');
  value.forEach((v: unknown, i) => {
    if (typeof v !== 'number' || !Number.isFinite(v) || v <= 0) fail(`${path}.${i}`, 'must be a finite number above 0');
    if (i > 0 && v <= (value[i - 1] as number)) fail(`${path}.${i}`, `must be larger than ${path}.${i - 1}`);
  });
  return [...(value as number[])];
}

export function checkOptions(options: EventlaneMetricsOptions | undefined): CheckedOptions {
  if (options === undefined) return { registry: undefined, buses: [], durationBuckets: [...DURATION_BUCKETS], batchBuckets: [...BATCH_BUCKETS] };
  if (options === null || typeof options !== 'object') throw new ConfigError('eventlaneMetrics() expects an options object or nothing.');
  const registry = options.registry;
  if (registry !== undefined && (registry === null || typeof registry.registerMetric !== 'function' || typeof registry.removeSingleMetric !== 'function')) {
    fail('registry', "must be a prom-client Registry (new Registry(), or prom-client's register)");
  }
  const buses = options.buses ?? [];
  if (!Array.isArray(buses)) fail('buses', 'must be an array of event buses');
  return {
    registry,
    buses: buses.map((b, i) => checkBus(b, `buses.${i}`)),
    durationBuckets: buckets(options.durationBuckets, 'durationBuckets', DURATION_BUCKETS),
    batchBuckets: buckets(options.batchBuckets, 'batchBuckets', BATCH_BUCKETS),
  };
}
