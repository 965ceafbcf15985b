/**
 * A real OpenTelemetry SDK for the tests of eventlane/otel: a Node tracer provider registered globally (its
 * context manager and W3C propagators included) exporting to memory, and a global meter provider read on
 * demand. Each test file runs in a process of its own, so registering globally here is per file.
 */
import { metrics } from '@opentelemetry/api';
import { InMemorySpanExporter, SimpleSpanProcessor, type ReadableSpan } from '@opentelemetry/sdk-trace-base';
import { NodeTracerProvider } from '@opentelemetry/sdk-trace-node';
import { MeterProvider, MetricReader, type DataPoint, type Histogram, type MetricData } from '@opentelemetry/sdk-metrics';
import { afterEach, beforeEach } from 'vitest';
import { z } from 'zod';
import { defineEvents, type EventBus, type EventMap } from '../../src/index.js';
import type { EventlaneInstrumentation } from '../../src/otel/index.js';

export const events = defineEvents({
  'order.created': z.object({ orderId: z.string() }),
  'order.paid': z.object({ orderId: z.string() }),
});

/** A metric reader whose `collect()` the test calls. */
class CollectingReader extends MetricReader {
  protected override async onForceFlush(): Promise<void> {}
  protected override async onShutdown(): Promise<void> {}
}

export const exporter = new InMemorySpanExporter();
export const tracerProvider = new NodeTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] });
tracerProvider.register();
/** The tracer a test's handler starts its own spans with (a database client's, say). */
export const testTracer = tracerProvider.getTracer('test');

let reader = new CollectingReader();

/** A fresh global meter provider (measurements start from nothing) and finished spans dropped. */
export function resetTelemetry(): void {
  exporter.reset();
  metrics.disable();
  reader = new CollectingReader();
  metrics.setGlobalMeterProvider(new MeterProvider({ readers: [reader] }));
}

/** Finished spans, in the order they ended. */
export async function finishedSpans(): Promise<ReadableSpan[]> {
  await tracerProvider.forceFlush();
  return exporter.getFinishedSpans();
}

/** The one finished span named `name` (fails when there is not exactly one). */
export async function onlySpan(name: string): Promise<ReadableSpan> {
  const found = (await finishedSpans()).filter((s) => s.name === name);
  if (found.length !== 1) throw new Error(`expected one span "${name}", found ${found.length}: ${(await finishedSpans()).map((s) => s.name).join(', ')}`);
  return found[0]!;
}

/** The metrics recorded so far under the global meter provider `resetTelemetry` set. */
export async function collectMetrics(): Promise<MetricData[]> {
  const { resourceMetrics } = await reader.collect();
  return resourceMetrics.scopeMetrics.flatMap((s) => s.metrics);
}

/** The data points of metric `name` (none when it was not recorded). */
export function points(all: MetricData[], name: string): DataPoint<number | Histogram>[] {
  return (all.find((m) => m.descriptor.name === name)?.dataPoints ?? []) as DataPoint<number | Histogram>[];
}

/** What one test set up, undone after it: the instrumentation disabled, then the bus closed. */
export interface PerTest<M extends EventMap> {
  otel?: EventlaneInstrumentation;
  bus?: EventBus<M>;
}

/**
 * For the calling test file: telemetry reset before each test (`resetTelemetry`), and after it what the test
 * put in the returned record undone and cleared.
 */
export function perTest<M extends EventMap>(): PerTest<M> {
  const t: PerTest<M> = {};
  beforeEach(() => resetTelemetry());
  afterEach(async () => {
    t.otel?.disable();
    await t.bus?.close();
    t.otel = t.bus = undefined;
  });
  return t;
}
