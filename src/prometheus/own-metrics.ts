/**
 * The collector's counters and histograms as prom-client metric objects (`registry.registerMetric`): each reads
 * the `Tallies` at scrape time and answers `get()` in prom-client's shape, so that `registry.metrics()`,
 * `getSingleMetricAsString`, `getMetricsAsJSON`, `resetMetrics`, `Registry.merge` and the cluster aggregator
 * take them as their own. A histogram's values are, per label set, its `_bucket` series (cumulative, `le` first
 * in the labels, then `+Inf`), `_sum` and `_count`, as prom-client's `Histogram.get()` gives them. A series
 * appears once something was counted in it (an unlabelled histogram always has one).
 */
import type { Metric, Registry } from 'prom-client';
import { OUTCOMES, type Buckets, type GroupTally, type Tallies } from './tallies.js';

type Labels = Record<string, string | number>;

export interface MetricValue {
  labels: Labels;
  value: number;
  metricName?: string;
}

/** A metric the registry reads (`registerMetric`), in prom-client's shape. */
export class OwnMetric {
  readonly aggregator = 'sum';

  constructor(
    /** Not readonly: a registry serving OpenMetrics renames its counters (without `_total`). */
    public name: string,
    readonly help: string,
    readonly type: 'counter' | 'histogram',
    private readonly read: (name: string) => MetricValue[],
    private readonly clear: () => void,
  ) {}

  get(): Promise<{ name: string; help: string; type: 'counter' | 'histogram'; aggregator: 'sum'; values: MetricValue[] }> {
    return Promise.resolve({ name: this.name, help: this.help, type: this.type, aggregator: this.aggregator, values: this.read(this.name) });
  }

  /** `registry.resetMetrics()`: the metric starts from zero. */
  reset(): void {
    this.clear();
  }

  register(registry: Registry): void {
    registry.registerMetric(this as unknown as Metric);
  }
}

/** Appends histogram `name`'s values of one label set to `out`. */
function histogram(name: string, labels: Labels, b: Buckets, out: MetricValue[]): void {
  const bucket = `${name}_bucket`;
  let acc = 0;
  for (let i = 0; i < b.bounds.length; i++) {
    acc += b.counts[i]!;
    out.push({ labels: { le: b.bounds[i]!, ...labels }, value: acc, metricName: bucket });
  }
  out.push({ labels: { le: '+Inf', ...labels }, value: b.count, metricName: bucket });
  out.push({ labels: { ...labels }, value: b.sum, metricName: `${name}_sum` });
  out.push({ labels: { ...labels }, value: b.count, metricName: `${name}_count` });
}

/** Every (type, group) tally, with its labels. */
function* groupTallies(t: Tallies): Generator<[{ type: string; group: string }, GroupTally]> {
  for (const [type, byGroup] of t.groups) for (const [group, g] of byGroup) yield [{ type, group }, g];
}

export function publishMetrics(t: Tallies): OwnMetric[] {
  return [
    new OwnMetric(
      'eventlane_events_published_total',
      'Events published (written by the transport), by event type.',
      'counter',
      () => [...t.publish].filter(([, p]) => p.written > 0).map(([type, p]) => ({ labels: { type }, value: p.written })),
      () => t.publish.forEach((p) => (p.written = 0)),
    ),
    new OwnMetric(
      'eventlane_publish_failures_total',
      "Events whose publish failed, by event type and the error's code (eventlane's code, else the error's name).",
      'counter',
      () => [...t.publish].flatMap(([type, p]) => [...p.failures].map(([code, value]) => ({ labels: { type, code }, value }))),
      () => t.publish.forEach((p) => p.failures.clear()),
    ),
    new OwnMetric(
      'eventlane_publish_duration_seconds',
      "A unit's write, from its hand-off to the transport to the write settling it, in seconds.",
      'histogram',
      (name) => {
        const out: MetricValue[] = [];
        for (const [type, p] of t.publish) if (p.writes.count > 0) histogram(name, { type }, p.writes, out);
        return out;
      },
      () => t.publish.forEach((p) => p.writes.clear()),
    ),
    new OwnMetric(
      'eventlane_batch_events',
      'Events per unit (one type and partition) of the writes the batcher hands the transport.',
      'histogram',
      (name) => {
        const out: MetricValue[] = [];
        histogram(name, {}, t.batches, out);
        return out;
      },
      () => t.batches.clear(),
    ),
  ];
}

export function consumeMetrics(t: Tallies): OwnMetric[] {
  return [
    new OwnMetric(
      'eventlane_events_processed_total',
      'Handler runs by outcome: ack, retry (another attempt follows), dead_letter.',
      'counter',
      () => {
        const out: MetricValue[] = [];
        for (const [labels, g] of groupTallies(t)) {
          OUTCOMES.forEach((outcome, i) => {
            if (g.outcomes[i]! > 0) out.push({ labels: { ...labels, outcome }, value: g.outcomes[i]! });
          });
        }
        return out;
      },
      () => {
        for (const [, g] of groupTallies(t)) g.outcomes.fill(0);
      },
    ),
    new OwnMetric(
      'eventlane_handler_duration_seconds',
      'Handler run time, from its start to its outcome, in seconds.',
      'histogram',
      (name) => {
        const out: MetricValue[] = [];
        for (const [labels, g] of groupTallies(t)) if (g.runs.count > 0) histogram(name, labels, g.runs, out);
        return out;
      },
      () => {
        for (const [, g] of groupTallies(t)) g.runs.clear();
      },
    ),
  ];
}
