/**
 * What the channel subscribers record with: the tracer, the metric instruments and the options, each read when
 * a span or a measurement is made, so `setTracerProvider`, `setMeterProvider` and `setConfig` apply to the
 * calls after them. Without a provider set, the global ones are used, as they are at that moment.
 */
import { metrics, trace, type Counter, type Histogram, type Meter, type MeterProvider, type Tracer, type TracerProvider } from '@opentelemetry/api';
import type { ResolvedConfig } from './config.js';
import { CONSUMED_MESSAGES, OPERATION_DURATION, PROCESS_DURATION, SENT_MESSAGES } from './semconv.js';

export interface Telemetry {
  readonly tracer: Tracer;
  readonly instruments: Instruments;
  readonly config: ResolvedConfig;
}

/** The semantic conventions' bucket boundaries for messaging durations, in seconds. */
const DURATION_BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.075, 0.1, 0.25, 0.5, 0.75, 1, 2.5, 5, 7.5, 10];

/** The messaging metrics of the conventions, from one meter. */
export class Instruments {
  readonly sent: Counter;
  readonly consumed: Counter;
  readonly processDuration: Histogram;
  readonly operationDuration: Histogram;

  constructor(meter: Meter) {
    this.sent = meter.createCounter(SENT_MESSAGES, { unit: '{message}', description: 'Messages a producer attempted to send.' });
    this.consumed = meter.createCounter(CONSUMED_MESSAGES, { unit: '{message}', description: 'Messages delivered to a handler.' });
    this.processDuration = meter.createHistogram(PROCESS_DURATION, {
      unit: 's',
      description: 'Duration of a handler run.',
      advice: { explicitBucketBoundaries: DURATION_BUCKETS },
    });
    this.operationDuration = meter.createHistogram(OPERATION_DURATION, {
      unit: 's',
      description: 'Duration of a publish() or publishMany() call, until the transport accepted its events or failed.',
      advice: { explicitBucketBoundaries: DURATION_BUCKETS },
    });
  }
}

/**
 * The options in force, and the tracer and instruments of the providers set, else of the global ones (rebuilt
 * when those change).
 */
export class TelemetrySource implements Telemetry {
  private tracerProvider: TracerProvider | undefined;
  private meterProvider: MeterProvider | undefined;
  private tracerOf: TracerProvider | undefined;
  private tracerValue: Tracer | undefined;
  private instrumentsOf: MeterProvider | undefined;
  private instrumentsValue: Instruments | undefined;

  constructor(
    private readonly name: string,
    private readonly version: string,
    public config: ResolvedConfig,
  ) {}

  setTracerProvider(provider: TracerProvider): void {
    this.tracerProvider = provider;
  }

  setMeterProvider(provider: MeterProvider): void {
    this.meterProvider = provider;
  }

  get tracer(): Tracer {
    const provider = this.tracerProvider ?? trace.getTracerProvider();
    if (provider !== this.tracerOf || this.tracerValue === undefined) {
      this.tracerValue = provider.getTracer(this.name, this.version);
      this.tracerOf = provider;
    }
    return this.tracerValue;
  }

  get instruments(): Instruments {
    const provider = this.meterProvider ?? metrics.getMeterProvider();
    if (provider !== this.instrumentsOf || this.instrumentsValue === undefined) {
      this.instrumentsValue = new Instruments(provider.getMeter(this.name, this.version));
      this.instrumentsOf = provider;
    }
    return this.instrumentsValue;
  }
}
