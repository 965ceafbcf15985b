/**
 * The collector's metrics on one registry: names, help, labels and buckets (Prometheus conventions: base units,
 * `_total` counters, labels of low cardinality, no ids). The counters and histograms counted from the channels
 * are the collector's own (src/prometheus/own-metrics.ts, over `Tallies`); the gauges and the reclaim counter
 * are prom-client's, and read the buses at scrape time through a `BusReader`.
 */
import { Counter, Gauge, type Registry } from 'prom-client';
import { ConfigError } from '../errors.js';
import { consumeMetrics, publishMetrics } from './own-metrics.js';
import type { BusReader } from './scrape.js';
import { Tallies } from './tallies.js';

type GroupLabels = 'type' | 'group';

export interface Metrics {
  /** What the channels count, read at scrape time. */
  readonly tallies: Tallies;
  readonly reclaimed: Counter<GroupLabels>;
}

/** Every metric's name, as registered. */
export const METRIC_NAMES = [
  'eventlane_events_published_total',
  'eventlane_publish_failures_total',
  'eventlane_events_processed_total',
  'eventlane_handler_duration_seconds',
  'eventlane_publish_duration_seconds',
  'eventlane_batch_events',
  'eventlane_publish_buffered_events',
  'eventlane_group_lag_events',
  'eventlane_group_pending_events',
  'eventlane_reclaimed_total',
] as const;

/** Sets `gauge` to `read`'s value per (type, group), the groups it cannot tell left out. */
async function setPerGroup(gauge: Gauge<GroupLabels>, reader: BusReader, read: (c: { lagEvents: number | undefined; pendingEvents: number | undefined }) => number | undefined): Promise<void> {
  const groups = await reader.groups();
  gauge.reset();
  for (const c of groups) {
    const v = read(c);
    if (v !== undefined) gauge.set({ type: c.type, group: c.group }, v);
  }
}

/** Registers the metrics on `registry`; a ConfigError when one of their names is taken there (another collector). */
export function createMetrics(registry: Registry, reader: BusReader, durationBuckets: number[], batchBuckets: number[]): Metrics {
  const taken = METRIC_NAMES.filter((name) => registry.getSingleMetric(name) !== undefined);
  if (taken.length > 0) {
    throw new ConfigError(`eventlaneMetrics: the registry already has ${taken.join(', ')}: one collector per registry (close() the other first, or pass another registry).`);
  }
  const tallies = new Tallies(durationBuckets, batchBuckets);
  for (const m of [...publishMetrics(tallies), ...consumeMetrics(tallies)]) m.register(registry);
  const registers = [registry];
  gauges(registers, reader);
  return { tallies, reclaimed: reclaimed(registers, reader) };
}

function reclaimed(registers: Registry[], reader: BusReader): Counter<GroupLabels> {
  return new Counter({
    name: 'eventlane_reclaimed_total',
    help: 'Redis stream entries the group took over from consumers that stopped (a batch entry holds many events).',
    labelNames: ['type', 'group'],
    registers,
    async collect() {
      for (const c of await reader.groups()) this.inc({ type: c.type, group: c.group }, 0);
    },
  });
}

function gauges(registers: Registry[], reader: BusReader): void {
  new Gauge({
    name: 'eventlane_publish_buffered_events',
    help: 'Events published and not yet written or failed, buffered or in flight in the buses read.',
    registers,
    collect() {
      this.set(reader.buffered());
    },
  });
  new Gauge({
    name: 'eventlane_group_lag_events',
    help: 'Events not yet delivered to the consumer group, read at scrape time.',
    labelNames: ['type', 'group'],
    registers,
    collect() {
      return setPerGroup(this, reader, (c) => c.lagEvents);
    },
  });
  new Gauge({
    name: 'eventlane_group_pending_events',
    help: 'Events delivered to the consumer group and not finished (being handled, waiting for a retry), read at scrape time.',
    labelNames: ['type', 'group'],
    registers,
    collect() {
      return setPerGroup(this, reader, (c) => c.pendingEvents);
    },
  });
}

/** Takes the metrics off `registry`. */
export function removeMetrics(registry: Registry): void {
  for (const name of METRIC_NAMES) registry.removeSingleMetric(name);
}
