/**
 * The OpenTelemetry messaging semantic conventions' names this instrumentation uses, and eventlane's own
 * (`eventlane.*`), kept here so the package depends on `@opentelemetry/api` alone.
 */

export const MESSAGING_SYSTEM = 'messaging.system';
export const MESSAGING_DESTINATION_NAME = 'messaging.destination.name';
export const MESSAGING_DESTINATION_PARTITION_ID = 'messaging.destination.partition.id';
export const MESSAGING_OPERATION_TYPE = 'messaging.operation.type';
export const MESSAGING_OPERATION_NAME = 'messaging.operation.name';
export const MESSAGING_MESSAGE_ID = 'messaging.message.id';
export const MESSAGING_MESSAGE_CONVERSATION_ID = 'messaging.message.conversation_id';
export const MESSAGING_BATCH_MESSAGE_COUNT = 'messaging.batch.message_count';
export const MESSAGING_CONSUMER_GROUP_NAME = 'messaging.consumer.group.name';
export const MESSAGING_CLIENT_ID = 'messaging.client.id';
export const ERROR_TYPE = 'error.type';

/** The delivery attempt of a process span, 1 on first delivery. */
export const EVENTLANE_ATTEMPT = 'eventlane.attempt';
/** What became of a processed event: `ack`, `retry` or `dead_letter`. */
export const EVENTLANE_OUTCOME = 'eventlane.outcome';
/** Span events of a process span whose handler failed: another attempt is due, or the event is dead-lettered. */
export const EVENTLANE_RETRY_EVENT = 'eventlane.retry';
export const EVENTLANE_DEAD_LETTER_EVENT = 'eventlane.dead_letter';
export const EVENTLANE_RETRY_ATTEMPT = 'eventlane.retry.attempt';
export const EVENTLANE_RETRY_DELAY_MS = 'eventlane.retry.delay_ms';
export const EVENTLANE_DEAD_LETTER_REASON = 'eventlane.dead_letter.reason';

export const SENT_MESSAGES = 'messaging.client.sent.messages';
export const CONSUMED_MESSAGES = 'messaging.client.consumed.messages';
export const PROCESS_DURATION = 'messaging.process.duration';
export const OPERATION_DURATION = 'messaging.client.operation.duration';

/** `error.type` of a failure: the error's class name (`ValidationError`, `TypeError`), `_OTHER` for a thrown non-error. */
export function errorType(err: unknown): string {
  if (err instanceof Error) return err.name || err.constructor.name || 'Error';
  return '_OTHER';
}
