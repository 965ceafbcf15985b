/**
 * `eventlane/prometheus` on a memory bus, read through a real prom-client registry: what publishes and handlers
 * count, the histograms, the gauges read at scrape time, and what `close()` and a second registry do.
 */
import { Registry, register } from 'prom-client';
import { afterEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { ConfigError, createEventBus, defineEvents, type EventBus } from '../../src/index.js';
import { eventlaneMetrics, METRIC_NAMES, type EventlaneMetrics } from '../../src/prometheus/index.js';

const events = defineEvents({ tick: z.object({ n: z.number() }) });
const open: { close(): unknown }[] = [];

afterEach(async () => {
  for (const x of open.splice(0).reverse()) await x.close();
});

async function bus(): Promise<EventBus<typeof events>> {
  const b = await createEventBus({ service: 'prom', events, transport: { type: 'memory' }, logger: false });
  open.push(b);
  return b;
}

function collector(...args: Parameters<typeof eventlaneMetrics>): EventlaneMetrics {
  const m = eventlaneMetrics(...args);
  open.push(m);
  return m;
}

type Values = { labels: Record<string, string | number>; value: number; metricName?: string }[];

/** The values of metric `name` on `registry` (after its collect ran), by their labels as `k=v,...`. */
async function values(registry: Registry, name: string): Promise<Record<string, number>> {
  const metric = registry.getSingleMetric(name);
  if (metric === undefined) throw new Error(`${name} is not registered`);
  const { values: rows } = (await metric.get()) as { values: Values };
  const out: Record<string, number> = {};
  for (const r of rows) {
    const labels = Object.entries(r.labels)
      .map(([k, v]) => `${k}=${v}`)
      .join(',');
    out[r.metricName && r.metricName !== name ? `${r.metricName.slice(name.length + 1)}{${labels}}` : labels] = r.value;
  }
  return out;
}

describe('eventlane/prometheus', () => {
  it('counts published and failed events, handler outcomes and durations, units and the gauges', async () => {
    const registry = new Registry();
    const b = await bus();
    collector({ registry, buses: [b] });
    await b.subscribe('tick', { group: 'g', maxDeliveries: 2, retry: { backoff: { initialMs: 1, maxMs: 1 } } }, async (e) => {
      if (e.data.n === 2) throw new Error('bad tick');
      if (e.data.n === 3) await new Promise((r) => setTimeout(r, 5));
    });
    await b.publish('tick', { n: 1 });
    await b.publishMany('tick', [{ n: 2 }, { n: 3 }, { n: 4 }]);
    await expect(b.publish('tick', { n: 'x' as unknown as number })).rejects.toMatchObject({ code: 'ERR_VALIDATION' });
    await expect(b.publishMany('tick', [{ n: 5 }, { n: 'y' as unknown as number }])).rejects.toMatchObject({ code: 'ERR_VALIDATION' });
    await b.idle();

    expect(await values(registry, 'eventlane_events_published_total')).toEqual({ 'type=tick': 4 });
    expect(await values(registry, 'eventlane_publish_failures_total')).toEqual({ 'type=tick,code=ERR_VALIDATION': 3 });
    expect(await values(registry, 'eventlane_events_processed_total')).toEqual({
      'type=tick,group=g,outcome=ack': 3,
      'type=tick,group=g,outcome=retry': 1,
      'type=tick,group=g,outcome=dead_letter': 1,
    });
    const handler = await values(registry, 'eventlane_handler_duration_seconds');
    expect(handler['count{type=tick,group=g}']).toBe(5); // n=2 ran twice
    expect(handler['sum{type=tick,group=g}']).toBeGreaterThanOrEqual(0.004); // n=3 waited 5 ms (timers may fire a little early)
    const batch = await values(registry, 'eventlane_batch_events');
    expect(batch['sum{}']).toBe(4);
    expect(batch['count{}']).toBeGreaterThanOrEqual(2);
    const publish = await values(registry, 'eventlane_publish_duration_seconds');
    expect(publish['count{type=tick}']).toBe(batch['count{}']); // one write time per unit
    expect(await values(registry, 'eventlane_publish_buffered_events')).toEqual({ '': 0 });
    expect(await values(registry, 'eventlane_group_lag_events')).toEqual({ 'type=tick,group=g': 0 });
    expect(await values(registry, 'eventlane_group_pending_events')).toEqual({ 'type=tick,group=g': 0 });
    expect(await values(registry, 'eventlane_reclaimed_total')).toEqual({ 'type=tick,group=g': 0 });

    const text = await registry.metrics();
    expect(text).toContain('# TYPE eventlane_handler_duration_seconds histogram');
    expect(text).toContain('eventlane_events_published_total{type="tick"} 4');
    expect(text).toContain('eventlane_events_processed_total{type="tick",group="g",outcome="dead_letter"} 1');
    expect(await registry.getSingleMetricAsString('eventlane_group_lag_events')).toContain('eventlane_group_lag_events{type="tick",group="g"} 0');
  });

  it('reads group lag and buffered events at scrape time, from every bus added', async () => {
    const registry = new Registry();
    const metrics = collector({ registry });
    const b = await bus();
    await (await b.subscribe('tick', { group: 'idle' }, () => {})).close();
    let release!: () => void;
    const gate = new Promise<void>((resolve) => (release = resolve));
    await b.subscribe('tick', { group: 'busy', concurrency: 2 }, () => gate);
    await b.publishMany('tick', [{ n: 1 }, { n: 2 }, { n: 3 }]);
    expect(await values(registry, 'eventlane_group_lag_events')).toEqual({}); // no bus to read yet
    metrics.addBus(b);
    // The closed subscription's group is not the bus's any more; the held one is.
    expect(await values(registry, 'eventlane_group_lag_events')).toEqual({ 'type=tick,group=busy': 1 });
    expect(await values(registry, 'eventlane_group_pending_events')).toEqual({ 'type=tick,group=busy': 2 });
    release();
    await b.idle();
    metrics.removeBus(b);
    expect(await values(registry, 'eventlane_group_pending_events')).toEqual({});
  });

  it('close() takes the metrics off the registry and stops counting; another collector then starts from zero', async () => {
    const registry = new Registry();
    const b = await bus();
    const first = eventlaneMetrics({ registry, buses: [b] });
    const counter = registry.getSingleMetric('eventlane_events_published_total')!;
    await b.publish('tick', { n: 1 });
    first.close();
    first.close();
    for (const name of METRIC_NAMES) expect(registry.getSingleMetric(name)).toBeUndefined();
    expect(await registry.metrics()).not.toContain('eventlane_');
    await b.publish('tick', { n: 2 });
    expect(((await counter.get()) as { values: Values }).values.map((v) => v.value)).toEqual([1]);

    collector({ registry, buses: [b] });
    await b.publishMany('tick', [{ n: 3 }, { n: 4 }]);
    expect(await values(registry, 'eventlane_events_published_total')).toEqual({ 'type=tick': 2 });
  });

  it('two registries do not clash (each counts); a second collector on one registry is a ConfigError', async () => {
    const a = new Registry();
    const c = new Registry();
    const b = await bus();
    collector({ registry: a, buses: [b] });
    collector({ registry: c });
    await b.publishMany('tick', [{ n: 1 }, { n: 2 }]);
    expect(await values(a, 'eventlane_events_published_total')).toEqual({ 'type=tick': 2 });
    expect(await values(c, 'eventlane_events_published_total')).toEqual({ 'type=tick': 2 });
    expect(() => eventlaneMetrics({ registry: a })).toThrow(ConfigError);
    expect(await values(a, 'eventlane_events_published_total')).toEqual({ 'type=tick': 2 }); // left as it was
  });

  it("registers on prom-client's global register by default; bad options are ConfigErrors naming them", async () => {
    collector();
    expect(register.getSingleMetric('eventlane_group_lag_events')).toBeDefined();
    open.pop()!.close();
    expect(register.getSingleMetric('eventlane_group_lag_events')).toBeUndefined();

    expect(() => eventlaneMetrics({ registry: {} as Registry })).toThrow(/registry must be a prom-client Registry/);
    expect(() => eventlaneMetrics({ registry: new Registry(), buses: [{}] as never })).toThrow(/buses\.0 must be an event bus/);
    expect(() => eventlaneMetrics({ registry: new Registry(), durationBuckets: [1, 0.5] })).toThrow(ConfigError);
    const m = collector({ registry: new Registry() });
    expect(() => m.addBus('bus' as never)).toThrow(ConfigError);
  });
});
