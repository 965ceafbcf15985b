/**
 * eventlane's `diagnostics_channel`s: what an instrumentation (OpenTelemetry, metrics, a test) subscribes to.
 * Nothing is built or published while no one subscribes: every call site checks `traced(...)` or
 * `hasSubscribers` first.
 *
 * Tracing channels (start, end, asyncStart, asyncEnd, error; see Node's TracingChannel):
 * - `eventlane:publish`: a `publish()` or `publishMany()` call, message `PublishMessage`. A subscriber to
 *   `start` may set `headers` (e.g. W3C `traceparent`): they are added to the events' headers, under any the
 *   caller set; and `within`: the call runs inside it.
 * - `eventlane:process`: a handler run, message `ProcessMessage`, on every transport's delivery engine (main
 *   thread; native worker threads run where no subscriber is). A subscriber to `start` may set `within`: the
 *   handler runs inside it.
 *
 * Channels: `eventlane:ack`, `eventlane:retry`, `eventlane:dead-letter` (`OutcomeMessage`), `eventlane:reclaim`
 * (`ReclaimMessage`), `eventlane:connection` (`ConnectionMessage`), `eventlane:batch` (`BatchMessage`, each unit
 * of a write as it settles), `eventlane:publish-error` (`PublishErrorMessage`, a publish refused before its
 * events reached the batcher).
 */
import dc from 'node:diagnostics_channel';
import type { EventEnvelope, EventHeaders, PublishOptions } from './envelope.js';
import type { DeliveryContext } from './transport.js';

/**
 * Set by a tracing channel's `start` subscriber: runs the traced work and returns what it returns, inside
 * whatever the subscriber needs current (an OpenTelemetry context with its span). It must call `run` once,
 * synchronously.
 */
export type Within = <R>(run: () => R) => R;

export interface PublishMessage {
  readonly type: string;
  /** The transport's type (`messaging.system`). */
  readonly transport: string;
  /** Events in the call: 1 for `publish()`. */
  readonly count: number;
  /** The call's options as the caller passed them (`correlationId`, `headers`...; `publishMany()`'s `key` may be a function); not to be changed. */
  readonly options: Readonly<PublishOptions> | undefined;
  /** Set by a `start` subscriber: headers added to every event of the call (the caller's win). */
  headers: EventHeaders | undefined;
  /** Set by a `start` subscriber: the call (and the batch write it schedules) runs inside it. */
  within: Within | undefined;
  /** Set on `error`. */
  error?: unknown;
}

export interface ProcessMessage {
  readonly event: EventEnvelope;
  readonly context: DeliveryContext;
  /** The transport's type (`messaging.system`); undefined when the engine's spec does not name it. */
  readonly transport: string | undefined;
  /** Set by a `start` subscriber: the handler runs inside it. */
  within: Within | undefined;
  /** Set on `error`. */
  error?: unknown;
}

export interface OutcomeMessage {
  readonly event: EventEnvelope;
  readonly context: DeliveryContext;
  /** retry: the next attempt and its delay; dead-letter: the reason. */
  readonly nextAttempt?: number;
  readonly delayMs?: number;
  readonly reason?: string;
  readonly error?: unknown;
  /**
   * The handler run, from its start to its outcome (to the give-up, for a run a drain gave up), in
   * milliseconds; measured only when one of the outcome channels had a subscriber as the run started. Runs back
   * to back in one delivery pass start where the previous one ended (the engine's work between them counts).
   */
  readonly durationMs?: number;
}

export interface ReclaimMessage {
  readonly type: string;
  readonly group: string;
  readonly consumer: string;
  /** Entries (Redis: stream entries) taken over from consumers that stopped. */
  readonly entries: number;
}

export interface ConnectionMessage {
  readonly transport: string;
  readonly state: 'lost' | 'restored';
  readonly role: string;
  readonly address: string;
}

export interface BatchMessage {
  readonly type: string;
  readonly partition: number;
  /** Events in the unit (one unit per type and partition of a write). */
  readonly events: number;
  /** Events of the unit written: `events` when it was written, fewer (often 0) when it failed. */
  readonly written: number;
  /** From the hand-off of the unit's write to the transport to the unit's settlement, in milliseconds. */
  readonly writeMs: number;
  /** Why the unit failed; undefined when it was written. */
  readonly error: Error | undefined;
}

export interface PublishErrorMessage {
  readonly type: string;
  /** Events in the refused call: 1 for `publish()` and `tryPublish()`; 0 for a `publishMany()` not given an array. */
  readonly count: number;
  /** The error the call rejected (or threw) with. */
  readonly error: unknown;
}

export const publishChannel = dc.tracingChannel<'eventlane:publish', PublishMessage>('eventlane:publish');
export const processChannel = dc.tracingChannel<'eventlane:process', ProcessMessage>('eventlane:process');
export const ackChannel = dc.channel('eventlane:ack');
export const retryChannel = dc.channel('eventlane:retry');
export const deadLetterChannel = dc.channel('eventlane:dead-letter');
export const reclaimChannel = dc.channel('eventlane:reclaim');
export const connectionChannel = dc.channel('eventlane:connection');
export const batchChannel = dc.channel('eventlane:batch');
export const publishErrorChannel = dc.channel('eventlane:publish-error');

/** Whether anyone subscribes to an outcome channel (`eventlane:ack`, `retry`, `dead-letter`): handler runs are timed. */
export function outcomesWatched(): boolean {
  return ackChannel.hasSubscribers || retryChannel.hasSubscribers || deadLetterChannel.hasSubscribers;
}

/**
 * A publish of `count` events of `type` refused before its events reached the batcher (or refused by it):
 * told to `eventlane:publish-error` while someone subscribes. Returns `error`, for the caller to throw or reject
 * with.
 */
export function refused<E>(type: string, count: number, error: E): E {
  if (publishErrorChannel.hasSubscribers) publishErrorChannel.publish({ type, count, error } satisfies PublishErrorMessage);
  return error;
}

/** `refused`, as the rejected promise the call returns. */
export function rejected(type: string, count: number, error: unknown): Promise<never> {
  return Promise.reject(refused(type, count, error));
}

/** Whether anyone subscribes to one of a tracing channel's events (each is checked: older Node 20 lacks the aggregate). */
export function traced(tc: dc.TracingChannel<string, object>): boolean {
  return tc.start.hasSubscribers || tc.end.hasSubscribers || tc.asyncStart.hasSubscribers || tc.asyncEnd.hasSubscribers || tc.error.hasSubscribers;
}
