/**
 * What the observability-overhead scenario measures eventlane under: nothing subscribed, the Prometheus
 * collector, or the OpenTelemetry SDK (spans sampled out, or recorded to an exporter that drops them). Each is
 * set up before the timed window and taken down after it, so `--no-fork` runs leave nothing registered.
 */
import { context, metrics, propagation, trace } from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import { W3CTraceContextPropagator, ExportResultCode, type ExportResult } from '@opentelemetry/core';
import { MeterProvider, MetricReader } from '@opentelemetry/sdk-metrics';
import { AlwaysOffSampler, AlwaysOnSampler, BasicTracerProvider, BatchSpanProcessor, type ReadableSpan, type SpanExporter } from '@opentelemetry/sdk-trace-base';
import { Registry } from 'prom-client';
import { instrumentEventlane } from '../../src/otel/index.js';
import { eventlaneMetrics } from '../../src/prometheus/index.js';
import type { ObserverKind } from './observer-kinds.js';

/** Exports nothing: what recording and batching spans costs, without a network. */
class DroppingExporter implements SpanExporter {
  export(_spans: ReadableSpan[], done: (result: ExportResult) => void): void {
    done({ code: ExportResultCode.SUCCESS });
  }
  async shutdown(): Promise<void> {}
}

/** A reader nobody collects from: measurements are aggregated, never exported. */
class IdleReader extends MetricReader {
  protected async onShutdown(): Promise<void> {}
  protected async onForceFlush(): Promise<void> {}
}

/** Sets up `kind`; the returned function takes it down. */
export async function observe(kind: ObserverKind): Promise<() => Promise<void>> {
  if (kind === 'none') return async () => undefined;
  if (kind === 'prometheus') {
    const collector = eventlaneMetrics({ registry: new Registry() });
    return async () => collector.close();
  }
  const contextManager = new AsyncLocalStorageContextManager().enable();
  context.setGlobalContextManager(contextManager);
  propagation.setGlobalPropagator(new W3CTraceContextPropagator());
  const sampler = kind === 'otel-recorded' ? new AlwaysOnSampler() : new AlwaysOffSampler();
  const tracerProvider = new BasicTracerProvider({ sampler, spanProcessors: [new BatchSpanProcessor(new DroppingExporter())] });
  trace.setGlobalTracerProvider(tracerProvider);
  const meterProvider = new MeterProvider({ readers: [new IdleReader()] });
  metrics.setGlobalMeterProvider(meterProvider);
  const instrumentation = instrumentEventlane();
  return async () => {
    instrumentation.disable();
    await tracerProvider.shutdown();
    await meterProvider.shutdown();
    trace.disable();
    metrics.disable();
    propagation.disable();
    context.disable();
  };
}
