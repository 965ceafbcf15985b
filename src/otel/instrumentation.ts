/**
 * `EventlaneInstrumentation`: eventlane's OpenTelemetry instrumentation, built on its `diagnostics_channel`s
 * (src/diagnostics.ts). It implements `@opentelemetry/instrumentation`'s `Instrumentation` interface by shape,
 * so `registerInstrumentations` takes it, without that package at run time.
 */
import dc from 'node:diagnostics_channel';
import type { MeterProvider, TracerProvider } from '@opentelemetry/api';
import { publishChannel, processChannel } from '../diagnostics.js';
import { resolveConfig, type EventlaneInstrumentationConfig } from './config.js';
import { TelemetrySource } from './telemetry.js';
import { PublishTracing } from './publish-spans.js';
import { ProcessTracing } from './process-spans.js';
import { packageVersion } from './version.js';

/** The outcome channels the process spans read (src/diagnostics.ts). */
const ACK = 'eventlane:ack';
const RETRY = 'eventlane:retry';
const DEAD_LETTER = 'eventlane:dead-letter';

export class EventlaneInstrumentation {
  readonly instrumentationName = 'eventlane';
  readonly instrumentationVersion: string = packageVersion();
  private readonly source: TelemetrySource;
  private readonly publish: PublishTracing;
  private readonly process: ProcessTracing;
  private enabled = false;

  /** Subscribes at once unless `config.enabled` is false. Throws `ConfigError` for a bad option. */
  constructor(config: EventlaneInstrumentationConfig = {}) {
    this.source = new TelemetrySource(this.instrumentationName, this.instrumentationVersion, resolveConfig(config));
    this.publish = new PublishTracing(this.source);
    this.process = new ProcessTracing(this.source);
    if (this.source.config.enabled) this.enable();
  }

  /** Subscribes to eventlane's channels; a second call does nothing. */
  enable(): void {
    if (this.enabled) return;
    this.enabled = true;
    publishChannel.subscribe(this.publish.subscribers);
    processChannel.subscribe(this.process.subscribers);
    dc.subscribe(ACK, this.process.onAck);
    dc.subscribe(RETRY, this.process.onRetry);
    dc.subscribe(DEAD_LETTER, this.process.onDeadLetter);
  }

  /**
   * Unsubscribes: no span, header or measurement is made after it. A span still open then (a handler that
   * has not settled) is not ended, so it is not exported.
   */
  disable(): void {
    if (!this.enabled) return;
    this.enabled = false;
    publishChannel.unsubscribe(this.publish.subscribers);
    processChannel.unsubscribe(this.process.subscribers);
    dc.unsubscribe(ACK, this.process.onAck);
    dc.unsubscribe(RETRY, this.process.onRetry);
    dc.unsubscribe(DEAD_LETTER, this.process.onDeadLetter);
  }

  /** Spans come from `provider` instead of the global tracer provider. */
  setTracerProvider(provider: TracerProvider): void {
    this.source.setTracerProvider(provider);
  }

  /** Metrics go to `provider` instead of the global meter provider. */
  setMeterProvider(provider: MeterProvider): void {
    this.source.setMeterProvider(provider);
  }

  /** Replaces the options (checked as the constructor's); enables or disables nothing. */
  setConfig(config: EventlaneInstrumentationConfig = {}): void {
    this.source.config = resolveConfig(config);
  }

  /** The options in force, defaults filled in. */
  getConfig(): EventlaneInstrumentationConfig {
    return { ...this.source.config };
  }
}

/**
 * Instruments eventlane with the global OpenTelemetry providers (set up the SDK first): the instrumentation,
 * enabled; `disable()` undoes it.
 * @example const otel = instrumentEventlane({ processSpanParent: 'child' });
 */
export function instrumentEventlane(config: EventlaneInstrumentationConfig = {}): EventlaneInstrumentation {
  const instrumentation = new EventlaneInstrumentation(config);
  instrumentation.enable();
  return instrumentation;
}
