/**
 * The collector's metrics on one registry: names, help, labels and buckets (Prometheus conventions: base units,
 * `_total` counters, labels of low cardinality, no ids). The gauges and the reclaim counter read the buses at
 * scrape time through a `BusReader`.
 */
import { Counter, Gauge, Histogram, type Registry } from 'prom-client';
import { ConfigError } from '../errors.js';
import type { BusReader } from './scrape.js';

type TypeLabel = 'type';
type GroupLabels = 'type' | 'group';

export interface Metrics {
  readonly published: Counter<TypeLabel>;
  readonly publishFailures: Counter<'type' | 'code'>;
  readonly processed: Counter<'type' | 'group' | 'outcome'>;
  readonly handlerDuration: Histogram<GroupLabels>;
  readonly publishDuration: Histogram<TypeLabel>;
  readonly batchEvents: Histogram<never>;
  readonly buffered: Gauge<never>;
  readonly lag: Gauge<GroupLabels>;
  readonly pending: Gauge<GroupLabels>;
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
  const registers = [registry];
  return { ...counters(registers, reader), ...histograms(registers, durationBuckets, batchBuckets), ...gauges(registers, reader) };
}

function counters(registers: Registry[], reader: BusReader): Pick<Metrics, 'published' | 'publishFailures' | 'processed' | 'reclaimed'> {
  return {
    published: new Counter({ name: 'eventlane_events_published_total', help: 'Events published (written by the transport), by event type.', labelNames: ['type'], registers }),
    publishFailures: new Counter({
      name: 'eventlane_publish_failures_total',
      help: "Events whose publish failed, by event type and the error's code (eventlane's code, else the error's name).",
      labelNames: ['type', 'code'],
      registers,
    }),
    processed: new Counter({
      name: 'eventlane_events_processed_total',
      help: 'Handler runs by outcome: ack, retry (another attempt follows), dead_letter.',
      labelNames: ['type', 'group', 'outcome'],
      registers,
    }),
    reclaimed: new Counter({
      name: 'eventlane_reclaimed_total',
      help: 'Redis stream entries the group took over from consumers that stopped (a batch entry holds many events).',
      labelNames: ['type', 'group'],
      registers,
      async collect() {
        for (const c of await reader.groups()) this.inc({ type: c.type, group: c.group }, 0);
      },
    }),
  };
}

function histograms(registers: Registry[], durationBuckets: number[], batchBuckets: number[]): Pick<Metrics, 'handlerDuration' | 'publishDuration' | 'batchEvents'> {
  return {
    handlerDuration: new Histogram({ name: 'eventlane_handler_duration_seconds', help: 'Handler run time, in seconds.', labelNames: ['type', 'group'], buckets: durationBuckets, registers }),
    publishDuration: new Histogram({
      name: 'eventlane_publish_duration_seconds',
      help: 'Time of a publish() or publishMany() call until it settled, in seconds.',
      labelNames: ['type'],
      buckets: durationBuckets,
      registers,
    }),
    batchEvents: new Histogram({ name: 'eventlane_batch_events', help: 'Events per unit (one type and partition) the batcher hands the transport.', buckets: batchBuckets, registers }),
  };
}

function gauges(registers: Registry[], reader: BusReader): Pick<Metrics, 'buffered' | 'lag' | 'pending'> {
  return {
    buffered: new Gauge({
      name: 'eventlane_publish_buffered_events',
      help: 'Events published and not yet written or failed, buffered or in flight in the buses read.',
      registers,
      collect() {
        this.set(reader.buffered());
      },
    }),
    lag: new Gauge({
      name: 'eventlane_group_lag_events',
      help: 'Events not yet delivered to the consumer group, read at scrape time.',
      labelNames: ['type', 'group'],
      registers,
      collect() {
        return setPerGroup(this, reader, (c) => c.lagEvents);
      },
    }),
    pending: new Gauge({
      name: 'eventlane_group_pending_events',
      help: 'Events delivered to the consumer group and not finished (being handled, waiting for a retry), read at scrape time.',
      labelNames: ['type', 'group'],
      registers,
      collect() {
        return setPerGroup(this, reader, (c) => c.pendingEvents);
      },
    }),
  };
}

/** Takes the metrics off `registry`. */
export function removeMetrics(registry: Registry): void {
  for (const name of METRIC_NAMES) registry.removeSingleMetric(name);
}
