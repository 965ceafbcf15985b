/**
 * The `eventlane:process` tracing channel's subscriber: a CONSUMER span `process <type>` per handler run, linked
 * to (or the child of) the send span whose context travelled in the event's headers, the handler run with
 * the span's context current, and the consumer metrics. The outcome channels (`eventlane:ack`, `retry`,
 * `dead-letter`) add what became of the event to the span of its run.
 *
 * When a run's span ends: an asynchronous handler's at `asyncEnd` (its outcome was published before);
 * a synchronous one's at its outcome, which the delivery engine publishes right after the run returns or
 * throws (`end`), and at the latest on the next microtask.
 */
import { isSpanContextValid, propagation, ROOT_CONTEXT, SpanKind, trace, type Attributes, type Link, type Span } from '@opentelemetry/api';
import type { TracingChannelSubscribers } from 'node:diagnostics_channel';
import type { OutcomeMessage, ProcessMessage } from '../diagnostics.js';
import type { EventEnvelope } from '../envelope.js';
import type { Telemetry } from './telemetry.js';
import { callHook, failSpan, guard, secondsSince, withError, withinContext } from './spans.js';
import {
  EVENTLANE_ATTEMPT,
  EVENTLANE_DEAD_LETTER_EVENT,
  EVENTLANE_DEAD_LETTER_REASON,
  EVENTLANE_OUTCOME,
  EVENTLANE_RETRY_ATTEMPT,
  EVENTLANE_RETRY_DELAY_MS,
  EVENTLANE_RETRY_EVENT,
  MESSAGING_CLIENT_ID,
  MESSAGING_CONSUMER_GROUP_NAME,
  MESSAGING_DESTINATION_NAME,
  MESSAGING_DESTINATION_PARTITION_ID,
  MESSAGING_MESSAGE_CONVERSATION_ID,
  MESSAGING_MESSAGE_ID,
  MESSAGING_OPERATION_NAME,
  MESSAGING_OPERATION_TYPE,
  MESSAGING_SYSTEM,
} from './semconv.js';

/** A traced handler run. */
interface ProcessRun {
  readonly span: Span;
  readonly event: EventEnvelope;
  readonly metricAttrs: Attributes;
  readonly startMs: number;
  failed: boolean;
  error: unknown;
  /** A synchronous run returned or threw: the span ends at its outcome. */
  returned: boolean;
  done: boolean;
}

/** Where a run is kept on its message (a property, not a WeakMap: one entry per handler run). */
const RUN = Symbol('eventlane.otel.process');
type Traced = ProcessMessage & { [RUN]?: ProcessRun };

export class ProcessTracing {
  /** The open run of each event, for the outcome channels (whose messages carry the event, not the run). */
  private readonly byEvent = new WeakMap<EventEnvelope, ProcessRun>();

  constructor(private readonly t: Telemetry) {}

  readonly subscribers: TracingChannelSubscribers<ProcessMessage> = {
    start: guard('process span start', (m: ProcessMessage) => this.start(m)),
    end: guard('process span end', (m: ProcessMessage) => this.end(m)),
    asyncStart: () => {},
    asyncEnd: guard('process span end', (m: ProcessMessage) => this.finishOf(m)),
    error: guard('process span error', (m: ProcessMessage) => this.error(m)),
  };

  readonly onAck = guard('ack', (m: unknown) => this.outcome(m as OutcomeMessage, 'ack'));
  readonly onRetry = guard('retry', (m: unknown) => this.outcome(m as OutcomeMessage, 'retry'));
  readonly onDeadLetter = guard('dead-letter', (m: unknown) => this.outcome(m as OutcomeMessage, 'dead_letter'));

  private start(m: ProcessMessage): void {
    const { event, context: dctx } = m;
    const metricAttrs: Attributes = {
      [MESSAGING_DESTINATION_NAME]: event.type,
      [MESSAGING_CONSUMER_GROUP_NAME]: dctx.group,
      [MESSAGING_OPERATION_NAME]: 'process',
    };
    if (m.transport !== undefined) metricAttrs[MESSAGING_SYSTEM] = m.transport;
    // From the root, not the active context: a delivery loop's context is not the event's.
    const extracted = event.headers === undefined ? ROOT_CONTEXT : propagation.extract(ROOT_CONTEXT, event.headers);
    const link = this.t.config.processSpanParent === 'link';
    const producer = trace.getSpanContext(extracted);
    const links: Link[] = link && producer !== undefined && isSpanContextValid(producer) ? [{ context: producer }] : [];
    const span = this.t.tracer.startSpan(`process ${event.type}`, { kind: SpanKind.CONSUMER, root: link, links, attributes: processAttributes(m, metricAttrs) }, extracted);
    m.within = withinContext(m.within, trace.setSpan(extracted, span));
    const run: ProcessRun = { span, event, metricAttrs, startMs: performance.now(), failed: false, error: undefined, returned: false, done: false };
    (m as Traced)[RUN] = run;
    this.byEvent.set(event, run);
    this.t.instruments.consumed.add(1, metricAttrs);
    callHook(this.t.config.processHook, span, { event, context: dctx, transport: m.transport }, 'processHook');
  }

  private error(m: ProcessMessage): void {
    const run = (m as Traced)[RUN];
    if (run === undefined) return;
    run.failed = true;
    run.error = m.error;
    failSpan(run.span, m.error);
  }

  /** The handler returned (or threw): a promise's span ends at `asyncEnd`, any other's at its outcome. */
  private end(m: ProcessMessage): void {
    const run = (m as Traced)[RUN];
    const result = (m as { result?: unknown }).result;
    if (run === undefined || isThenable(result)) return;
    run.returned = true;
    queueMicrotask(() => this.finish(run));
  }

  private outcome(m: OutcomeMessage, outcome: 'ack' | 'retry' | 'dead_letter'): void {
    const run = this.byEvent.get(m.event);
    if (run === undefined || run.done) return;
    const { span } = run;
    span.setAttribute(EVENTLANE_OUTCOME, outcome);
    if (outcome === 'retry') span.addEvent(EVENTLANE_RETRY_EVENT, { [EVENTLANE_RETRY_ATTEMPT]: m.nextAttempt ?? 0, [EVENTLANE_RETRY_DELAY_MS]: m.delayMs ?? 0 });
    if (outcome === 'dead_letter') span.addEvent(EVENTLANE_DEAD_LETTER_EVENT, { [EVENTLANE_DEAD_LETTER_REASON]: m.reason ?? '' });
    if (run.returned) this.finish(run);
  }

  private finishOf(m: ProcessMessage): void {
    const run = (m as Traced)[RUN];
    if (run !== undefined) this.finish(run);
  }

  private finish(run: ProcessRun): void {
    if (run.done) return;
    run.done = true;
    if (this.byEvent.get(run.event) === run) this.byEvent.delete(run.event);
    run.span.end();
    this.t.instruments.processDuration.record(secondsSince(run.startMs), withError(run.metricAttrs, run.failed, run.error));
  }
}

/** The process span's attributes: the metrics' and the event's and delivery's own. */
function processAttributes(m: ProcessMessage, metricAttrs: Attributes): Attributes {
  const { event, context: dctx } = m;
  const attrs: Attributes = {
    ...metricAttrs,
    [MESSAGING_OPERATION_TYPE]: 'process',
    [MESSAGING_MESSAGE_ID]: event.id,
    [MESSAGING_DESTINATION_PARTITION_ID]: String(dctx.partition),
    [MESSAGING_CLIENT_ID]: dctx.consumer,
    [EVENTLANE_ATTEMPT]: dctx.attempt,
  };
  if (event.correlationId !== undefined) attrs[MESSAGING_MESSAGE_CONVERSATION_ID] = event.correlationId;
  return attrs;
}

function isThenable(value: unknown): boolean {
  return value !== null && (typeof value === 'object' || typeof value === 'function') && typeof (value as { then?: unknown }).then === 'function';
}
