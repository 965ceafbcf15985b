/**
 * EventlaneInstrumentation as an OpenTelemetry instrumentation: registerInstrumentations takes it (with the
 * providers it is given), disable() stops every span, header and measurement, and bad options are a
 * ConfigError.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { registerInstrumentations } from '@opentelemetry/instrumentation';
import { InMemorySpanExporter, SimpleSpanProcessor } from '@opentelemetry/sdk-trace-base';
import { NodeTracerProvider } from '@opentelemetry/sdk-trace-node';
import { MeterProvider, MetricReader } from '@opentelemetry/sdk-metrics';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ConfigError, createEventBus, type EventBus, type EventEnvelope } from '../../src/index.js';
import { EventlaneInstrumentation, instrumentEventlane } from '../../src/otel/index.js';
import { collectMetrics, events, finishedSpans, resetTelemetry } from './otel-harness.js';

let bus: EventBus<typeof events> | undefined;
const undo: (() => void)[] = [];

beforeEach(() => resetTelemetry());
afterEach(async () => {
  for (const f of undo.splice(0)) f();
  await bus?.close();
  bus = undefined;
});

/** Publishes one order to a subscribed memory bus; returns the headers the handler saw. */
async function roundTrip(): Promise<Record<string, string> | undefined> {
  bus ??= await createEventBus({ service: 'shop', events, transport: { type: 'memory' }, logger: false });
  const seen: EventEnvelope[] = [];
  const sub = await bus.subscribe('order.created', { group: 'billing' }, (e) => void seen.push(e));
  await bus.publish('order.created', { orderId: 'o-1' });
  await bus.idle();
  await sub.close();
  return seen[0]!.headers;
}

class CollectingReader extends MetricReader {
  protected override async onForceFlush(): Promise<void> {}
  protected override async onShutdown(): Promise<void> {}
}

describe('EventlaneInstrumentation', () => {
  it('names itself eventlane with the package version, and reports its options with their defaults', () => {
    const { version } = JSON.parse(readFileSync(join(__dirname, '../../package.json'), 'utf8')) as { version: string };
    const i = new EventlaneInstrumentation({ enabled: false });
    expect([i.instrumentationName, i.instrumentationVersion]).toEqual(['eventlane', version]);
    expect(i.getConfig()).toMatchObject({ enabled: false, processSpanParent: 'link' });
    i.setConfig({ processSpanParent: 'child' });
    expect(i.getConfig()).toMatchObject({ enabled: true, processSpanParent: 'child' });
  });

  it('is taken by registerInstrumentations, which enables it with the providers it is given; unloading disables it', async () => {
    const exporter = new InMemorySpanExporter();
    const tracerProvider = new NodeTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] });
    const reader = new CollectingReader();
    const meterProvider = new MeterProvider({ readers: [reader] });
    const unload = registerInstrumentations({ instrumentations: [new EventlaneInstrumentation({ enabled: false })], tracerProvider, meterProvider });
    undo.push(unload);
    await roundTrip();
    expect(
      exporter
        .getFinishedSpans()
        .map((s) => s.name)
        .sort(),
    ).toEqual(['process order.created', 'send order.created']);
    expect(await finishedSpans()).toEqual([]);
    const { resourceMetrics } = await reader.collect();
    expect(resourceMetrics.scopeMetrics.flatMap((s) => s.metrics.map((m) => m.descriptor.name))).toContain('messaging.client.sent.messages');
    unload();
    exporter.reset();
    await roundTrip();
    expect(exporter.getFinishedSpans()).toEqual([]);
  });

  it('constructed as registerInstrumentations is usually given it, uses the global providers', async () => {
    const i = new EventlaneInstrumentation();
    undo.push(registerInstrumentations({ instrumentations: [i] }), () => i.disable());
    await roundTrip();
    expect((await finishedSpans()).map((s) => s.name).sort()).toEqual(['process order.created', 'send order.created']);
  });

  it('disable() stops the spans, the headers and the measurements; enable() brings them back', async () => {
    const otel = instrumentEventlane();
    undo.push(() => otel.disable());
    expect((await roundTrip())?.['traceparent']).toBeDefined();
    otel.disable();
    resetTelemetry();
    expect(await roundTrip()).toBeUndefined();
    expect(await finishedSpans()).toEqual([]);
    expect(await collectMetrics()).toEqual([]);
    otel.enable();
    otel.enable();
    await roundTrip();
    expect((await finishedSpans()).map((s) => s.name).sort()).toEqual(['process order.created', 'send order.created']);
  });

  it('rejects bad options with a ConfigError naming each', () => {
    const bad = (config: unknown) => {
      try {
        new EventlaneInstrumentation(config as never);
      } catch (err) {
        expect(err).toBeInstanceOf(ConfigError);
        return (err as ConfigError).issues.map((i) => i.path.join('.'));
      }
      throw new Error('no error');
    };
    expect(bad({ processSpanParent: 'parent' })).toEqual(['processSpanParent']);
    expect(bad({ enabled: 'yes', publishHook: 1, processhook: () => {} })).toEqual(['enabled', 'publishHook', 'processhook']);
    expect(bad('link')).toEqual([]);
    expect(() => new EventlaneInstrumentation({ enabled: false }).setConfig({ processSpanParent: 'x' as never })).toThrow(ConfigError);
  });
});
