/**
 * eventlane/otel's metrics with a real SDK (a metric reader collected on demand): the conventions' counters
 * and histograms, their low-cardinality attributes, and error.type on failures.
 */
import type { Histogram } from '@opentelemetry/sdk-metrics';
import { describe, expect, it } from 'vitest';
import { createEventBus } from '../../src/index.js';
import { instrumentEventlane } from '../../src/otel/index.js';
import { collectMetrics, events, perTest, points } from './otel-harness.js';

const t = perTest<typeof events>();

describe('eventlane/otel metrics (memory transport)', () => {
  it('counts sent and consumed messages and records the publish and process durations, in seconds', async () => {
    t.otel = instrumentEventlane();
    t.bus = await createEventBus({ service: 'shop', events, transport: { type: 'memory' }, logger: false });
    await t.bus.subscribe('order.created', { group: 'billing' }, async () => {
      await new Promise((r) => setTimeout(r, 20));
    });
    await t.bus.publish('order.created', { orderId: 'o-1' });
    await t.bus.publishMany('order.created', [{ orderId: 'o-2' }, { orderId: 'o-3' }]);
    await t.bus.idle();
    const all = await collectMetrics();
    const send = { 'messaging.system': 'memory', 'messaging.destination.name': 'order.created', 'messaging.operation.name': 'send' };
    const consume = { 'messaging.system': 'memory', 'messaging.destination.name': 'order.created', 'messaging.consumer.group.name': 'billing', 'messaging.operation.name': 'process' };
    expect(points(all, 'messaging.client.sent.messages').map((p) => [p.attributes, p.value])).toEqual([[send, 3]]);
    expect(points(all, 'messaging.client.consumed.messages').map((p) => [p.attributes, p.value])).toEqual([[consume, 3]]);
    const operation = points(all, 'messaging.client.operation.duration');
    expect(operation.map((p) => [p.attributes, (p.value as Histogram).count])).toEqual([[send, 2]]);
    const processed = points(all, 'messaging.process.duration');
    expect(processed.map((p) => [p.attributes, (p.value as Histogram).count])).toEqual([[consume, 3]]);
    // Each handler slept 20 ms: the histogram is in seconds.
    expect((processed[0]!.value as Histogram).min).toBeGreaterThanOrEqual(0.015);
    expect((processed[0]!.value as Histogram).max).toBeLessThan(5);
    const units = Object.fromEntries(all.map((m) => [m.descriptor.name, m.descriptor.unit]));
    expect(units).toEqual({
      'messaging.client.sent.messages': '{message}',
      'messaging.client.consumed.messages': '{message}',
      'messaging.client.operation.duration': 's',
      'messaging.process.duration': 's',
    });
  });

  it('adds error.type to the measurements of a failed publish and a failed handler run', async () => {
    t.otel = instrumentEventlane();
    t.bus = await createEventBus({ service: 'shop', events, transport: { type: 'memory' }, logger: false });
    await t.bus.subscribe('order.paid', { group: 'ledger', maxDeliveries: 1 }, (e) => {
      if (e.data.orderId === 'bad') throw new TypeError('bad order');
    });
    await t.bus.publish('order.paid', { orderId: 'good' });
    await t.bus.publish('order.paid', { orderId: 'bad' });
    await t.bus.publish('order.paid', { orderId: 7 } as never).catch(() => undefined);
    await t.bus.idle();
    const all = await collectMetrics();
    const sent = new Map(points(all, 'messaging.client.sent.messages').map((p) => [p.attributes['error.type'], p.value]));
    expect(sent).toEqual(
      new Map([
        [undefined, 2],
        ['ValidationError', 1],
      ]),
    );
    const processed = new Map(points(all, 'messaging.process.duration').map((p) => [p.attributes['error.type'], (p.value as Histogram).count]));
    expect(processed).toEqual(
      new Map([
        [undefined, 1],
        ['TypeError', 1],
      ]),
    );
    // Low cardinality: no ids, keys or attempts among the attributes.
    const keys = new Set(all.flatMap((m) => m.dataPoints.flatMap((p) => Object.keys(p.attributes))));
    expect([...keys].sort()).toEqual(['error.type', 'messaging.consumer.group.name', 'messaging.destination.name', 'messaging.operation.name', 'messaging.system']);
  });
});
