/**
 * `eventlane/prometheus`'s own counters and histograms through a real prom-client registry: failed writes and
 * refused publishes as failures with their code, handler times in their buckets, and the registry's other
 * readers (`getMetricsAsJSON`, `Registry.merge`, `resetMetrics`, OpenMetrics).
 */
import { Counter, Registry } from 'prom-client';
import { afterEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { createEventBus, defineEvents, registerTransport, type EventBus } from '../../src/index.js';
import { eventlaneMetrics } from '../../src/prometheus/index.js';
import type { Transport } from '../../src/transport.js';

const events = defineEvents({ tick: z.object({ n: z.number() }) });
const open: { close(): unknown }[] = [];

afterEach(async () => {
  for (const x of open.splice(0).reverse()) await x.close();
});

async function bus(transport: { type: string } = { type: 'memory' }): Promise<EventBus<typeof events>> {
  const b = await createEventBus({ service: 'prom', events, transport, logger: false });
  open.push(b);
  return b;
}

function collector(registry: Registry): void {
  open.push(eventlaneMetrics({ registry }));
}

/** A publish-only transport whose first write writes one event of its unit, then fails the unit. */
const halfWriting: Transport = {
  type: 'half-writing',
  capabilities: { encoding: 'none', maxInFlight: 1, maxEventBytes: 1 << 20 },
  connect: async () => {},
  partitionsFor: () => 1,
  write: (_units, settle) => settle.failed(0, new Error('disk full'), 1),
  subscribe: () => Promise.reject(new Error('publish only')),
  close: async () => {},
};

/** The text lines of metric `name` (its samples, without HELP and TYPE). */
async function lines(registry: Registry, name: string): Promise<string[]> {
  return (await registry.getSingleMetricAsString(name)).split('\n').filter((l) => !l.startsWith('#'));
}

describe('eventlane/prometheus, its own metrics', () => {
  it('counts the events of a unit whose write failed as failures with the code, those written as published', async () => {
    registerTransport('half-writing', () => halfWriting);
    const registry = new Registry();
    collector(registry);
    const b = await bus({ type: 'half-writing' });
    await expect(b.publishMany('tick', [{ n: 1 }, { n: 2 }, { n: 3 }])).rejects.toMatchObject({ code: 'ERR_PUBLISH_PARTIAL' });
    expect(await lines(registry, 'eventlane_events_published_total')).toEqual(['eventlane_events_published_total{type="tick"} 1']);
    expect(await lines(registry, 'eventlane_publish_failures_total')).toEqual(['eventlane_publish_failures_total{type="tick",code="ERR_TRANSPORT"} 2']);
    expect(await lines(registry, 'eventlane_publish_duration_seconds')).toContain('eventlane_publish_duration_seconds_count{type="tick"} 1');
    expect(await lines(registry, 'eventlane_batch_events')).toContain('eventlane_batch_events_sum 3');
  });

  it('counts publishes refused before the transport: bad payloads, tryPublish, a closed bus', async () => {
    const registry = new Registry();
    collector(registry);
    const b = await createEventBus({ service: 'prom', events, transport: { type: 'memory' }, logger: false });
    await b.publish('tick', { n: 1 });
    await expect(b.publish('tick', { n: 'x' as unknown as number })).rejects.toMatchObject({ code: 'ERR_VALIDATION' });
    expect(() => b.tryPublish('tick', { n: 'y' as unknown as number })).toThrow();
    await b.close();
    await expect(b.publishMany('tick', [{ n: 2 }, { n: 3 }])).rejects.toMatchObject({ code: 'ERR_CLOSED' });
    expect(await lines(registry, 'eventlane_publish_failures_total')).toEqual([
      'eventlane_publish_failures_total{type="tick",code="ERR_VALIDATION"} 2',
      'eventlane_publish_failures_total{type="tick",code="ERR_CLOSED"} 2',
    ]);
    expect(await lines(registry, 'eventlane_events_published_total')).toEqual(['eventlane_events_published_total{type="tick"} 1']);
  });

  it('puts each handler run in its duration bucket', async () => {
    const registry = new Registry();
    collector(registry);
    const b = await bus();
    await b.subscribe('tick', { group: 'g' }, async (e) => {
      if (e.data.n === 2) await new Promise((r) => setTimeout(r, 30));
    });
    await b.publish('tick', { n: 1 });
    await b.publish('tick', { n: 2 });
    await b.idle();
    const text = await lines(registry, 'eventlane_handler_duration_seconds');
    const bucket = (le: string) => Number(text.find((l) => l.startsWith(`eventlane_handler_duration_seconds_bucket{le="${le}",type="tick",group="g"}`))?.split(' ')[1]);
    expect(bucket('0.01')).toBe(1); // the run that did not wait (generous: a loaded machine)
    expect(bucket('0.025')).toBe(1); // the 30 ms run is above it
    expect(bucket('+Inf')).toBe(2);
    expect(text).toContain('eventlane_handler_duration_seconds_count{type="tick",group="g"} 2');
  });

  it('works with getMetricsAsJSON, Registry.merge, resetMetrics and OpenMetrics', async () => {
    const registry = new Registry();
    registry.setDefaultLabels({ app: 'shop' });
    collector(registry);
    const other = new Registry();
    new Counter({ name: 'app_orders_total', help: 'Orders.', registers: [other] }).inc(3);
    const b = await bus();
    await b.subscribe('tick', { group: 'g' }, () => {});
    await b.publishMany('tick', [{ n: 1 }, { n: 2 }]);
    await b.idle();

    const json = await registry.getMetricsAsJSON();
    const processed = json.find((m) => m.name === 'eventlane_events_processed_total')!;
    expect(processed).toMatchObject({ type: 'counter', aggregator: 'sum', values: [{ labels: { type: 'tick', group: 'g', outcome: 'ack', app: 'shop' }, value: 2 }] });
    const handler = json.find((m) => m.name === 'eventlane_handler_duration_seconds')!;
    expect(handler.type).toBe('histogram');
    expect(handler.values).toContainEqual({ labels: { le: '+Inf', type: 'tick', group: 'g', app: 'shop' }, value: 2, metricName: 'eventlane_handler_duration_seconds_bucket' });
    expect(handler.values).toContainEqual({ labels: { type: 'tick', group: 'g', app: 'shop' }, value: 2, metricName: 'eventlane_handler_duration_seconds_count' });

    const merged = await Registry.merge([registry, other]).metrics();
    expect(merged).toContain('app_orders_total 3');
    expect(merged).toContain('eventlane_events_published_total{type="tick"} 2');
    expect(merged).toContain('# TYPE eventlane_batch_events histogram');

    registry.resetMetrics();
    expect(await lines(registry, 'eventlane_events_processed_total')).toEqual([]);
    expect(await lines(registry, 'eventlane_batch_events')).toContain('eventlane_batch_events_count{app="shop"} 0');
    await b.publish('tick', { n: 3 });
    await b.idle();
    expect(await lines(registry, 'eventlane_events_published_total')).toEqual(['eventlane_events_published_total{type="tick",app="shop"} 1']);

    // OpenMetrics names counters without `_total` and adds it to their samples (prom-client renames them for good).
    registry.setContentType(Registry.OPENMETRICS_CONTENT_TYPE as never);
    const om = await registry.metrics();
    expect(om).toContain('# TYPE eventlane_events_processed counter');
    expect(om).toContain('eventlane_events_processed_total{type="tick",group="g",outcome="ack",app="shop"} 1');
  });
});
