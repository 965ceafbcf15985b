/**
 * `eventlaneMetrics`: registers eventlane's metrics on a prom-client registry, counts from the diagnostics
 * channels, and reads its buses at scrape time; `close()` undoes both.
 */
import { register as globalRegister } from 'prom-client';
import { subscribeChannels } from './channels.js';
import { createMetrics, removeMetrics } from './metrics.js';
import { checkBus, checkOptions, type EventlaneMetricsOptions, type MeteredBus } from './options.js';
import { BusReader } from './scrape.js';

/** A registered collector. */
export interface EventlaneMetrics {
  /** Reads `bus` at scrape time too (buffered events, its groups' lag and pending). Idempotent. */
  addBus(bus: MeteredBus): void;
  /** Stops reading `bus` at scrape time (its groups' series go with the next scrape). */
  removeBus(bus: MeteredBus): void;
  /** Unregisters the metrics from the registry and stops counting. Idempotent. */
  close(): void;
}

/**
 * Registers eventlane's metrics on `options.registry` (default: prom-client's global `register`) and starts
 * counting. Throws `ConfigError` for a bad option, or when the registry already has them (one collector per
 * registry).
 * @example
 * const metrics = eventlaneMetrics({ registry, buses: [bus] });
 * app.get('/metrics', async (_req, res) => res.type(registry.contentType).send(await registry.metrics()));
 * // on shutdown: metrics.close();
 */
export function eventlaneMetrics(options?: EventlaneMetricsOptions): EventlaneMetrics {
  const o = checkOptions(options);
  const registry = o.registry ?? globalRegister;
  const reader = new BusReader();
  for (const bus of o.buses) reader.buses.add(bus);
  const metrics = createMetrics(registry, reader, o.durationBuckets, o.batchBuckets);
  const unsubscribe = subscribeChannels(metrics);
  let closed = false;
  return {
    addBus(bus) {
      reader.buses.add(checkBus(bus, 'addBus(bus): bus'));
    },
    removeBus(bus) {
      reader.buses.delete(bus);
    },
    close() {
      if (closed) return;
      closed = true;
      unsubscribe();
      removeMetrics(registry);
      reader.buses.clear();
    },
  };
}
