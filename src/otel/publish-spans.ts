/**
 * The `eventlane:publish` tracing channel's subscriber: a PRODUCER span `send <type>` per `publish()` or
 * `publishMany()` call, the trace context injected into the call's events' headers (unless the caller set
 * `traceparent`), the call run with the span's context current, and the producer metrics.
 */
import { context, propagation, SpanKind, trace, type Attributes, type Span } from '@opentelemetry/api';
import type { TracingChannelSubscribers } from 'node:diagnostics_channel';
import type { PublishMessage } from '../diagnostics.js';
import type { EventHeaders } from '../envelope.js';
import type { Telemetry } from './telemetry.js';
import { callHook, failSpan, guard, secondsSince, withError, withinContext } from './spans.js';
import { MESSAGING_BATCH_MESSAGE_COUNT, MESSAGING_DESTINATION_NAME, MESSAGING_MESSAGE_CONVERSATION_ID, MESSAGING_OPERATION_NAME, MESSAGING_OPERATION_TYPE, MESSAGING_SYSTEM } from './semconv.js';

/** A traced call: its span, the metrics' attributes, and its failure once known. */
interface SendRun {
  readonly span: Span;
  readonly metricAttrs: Attributes;
  readonly startMs: number;
  failed: boolean;
  error: unknown;
  done: boolean;
}

/** Where a call's run is kept on its message (a property, not a WeakMap: one entry per publish call). */
const RUN = Symbol('eventlane.otel.send');
type Traced = PublishMessage & { [RUN]?: SendRun };

export class PublishTracing {
  constructor(private readonly t: Telemetry) {}

  readonly subscribers: TracingChannelSubscribers<PublishMessage> = {
    start: guard('send span start', (m: PublishMessage) => this.start(m)),
    end: guard('send span end', (m: PublishMessage) => this.end(m)),
    asyncStart: () => {},
    asyncEnd: guard('send span end', (m: PublishMessage) => this.finish(m)),
    error: guard('send span error', (m: PublishMessage) => this.error(m)),
  };

  private start(m: PublishMessage): void {
    const metricAttrs: Attributes = { [MESSAGING_SYSTEM]: m.transport, [MESSAGING_DESTINATION_NAME]: m.type, [MESSAGING_OPERATION_NAME]: 'send' };
    const parent = context.active();
    const span = this.t.tracer.startSpan(`send ${m.type}`, { kind: SpanKind.PRODUCER, attributes: sendAttributes(m) }, parent);
    const ctx = trace.setSpan(parent, span);
    if (m.options?.headers?.['traceparent'] === undefined) {
      const carrier: EventHeaders = {};
      propagation.inject(ctx, carrier);
      if (Object.keys(carrier).length > 0) m.headers = m.headers === undefined ? carrier : { ...m.headers, ...carrier };
    }
    m.within = withinContext(m.within, ctx);
    (m as Traced)[RUN] = { span, metricAttrs, startMs: performance.now(), failed: false, error: undefined, done: false };
    callHook(this.t.config.publishHook, span, { type: m.type, transport: m.transport, count: m.count, options: m.options }, 'publishHook');
  }

  private error(m: PublishMessage): void {
    const run = (m as Traced)[RUN];
    if (run === undefined) return;
    run.failed = true;
    run.error = m.error;
    failSpan(run.span, m.error);
  }

  /** The call's synchronous part returned; a call that threw there (failed already) gets no async events: its span ends here. */
  private end(m: PublishMessage): void {
    if ((m as Traced)[RUN]?.failed === true) this.finish(m);
  }

  private finish(m: PublishMessage): void {
    const run = (m as Traced)[RUN];
    if (run === undefined || run.done) return;
    run.done = true;
    run.span.end();
    const attrs = withError(run.metricAttrs, run.failed, run.error);
    const { sent, operationDuration } = this.t.instruments;
    operationDuration.record(secondsSince(run.startMs), attrs);
    sent.add(m.count, attrs);
  }
}

/** The send span's attributes: the batch count for a call of other than one event, the correlation id where set. */
function sendAttributes(m: PublishMessage): Attributes {
  const attrs: Attributes = {
    [MESSAGING_SYSTEM]: m.transport,
    [MESSAGING_DESTINATION_NAME]: m.type,
    [MESSAGING_OPERATION_TYPE]: 'send',
    [MESSAGING_OPERATION_NAME]: 'send',
  };
  if (m.count !== 1) attrs[MESSAGING_BATCH_MESSAGE_COUNT] = m.count;
  const conversation = m.options?.correlationId;
  if (conversation !== undefined) attrs[MESSAGING_MESSAGE_CONVERSATION_ID] = conversation;
  return attrs;
}
