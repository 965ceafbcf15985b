/**
 * The delivery rules every transport applies, stated once: what becomes of an event whose handler failed
 * (another attempt after its backoff, or a dead letter), when a redelivery after consumers died with the event
 * is one too many, and the dead letter of a handler still running when its subscription's drain ran out on
 * the last delivery allowed. A transport carries a verdict out its own way (a timer, a retry stream, a DLQ
 * stream); the decision is made here.
 */
import { backoffDelay } from './backoff.js';
import type { EventEnvelope } from './envelope.js';
import { describeError, isRetryable } from './errors.js';
import type { BackoffOptions, DeadLetter } from './transport.js';

/** The part of a subscription the rules read (a `SubscriptionSpec` is one). */
export interface DeliveryRules {
  /** Attempts an event gets in all, the first delivery included. */
  readonly maxDeliveries: number;
  readonly backoff: BackoffOptions;
}

/** What becomes of an event whose handler failed: `retry` as attempt `attempt` after `delayMs`, or `dead`. */
export type FailureVerdict = { readonly retry: true; readonly attempt: number; readonly delayMs: number } | { readonly retry: false; readonly error: string };

/**
 * The verdict on attempt `attempt` (1-based) failing with `err`: dead when it was the last attempt allowed or
 * the error is not retryable (`NonRetryableError`, a consumer-side `ValidationError`), otherwise the next
 * attempt after the backoff of this one.
 */
export function afterFailure(rules: DeliveryRules, attempt: number, err: unknown): FailureVerdict {
  if (isLastAttempt(rules, attempt) || !isRetryable(err)) return { retry: false, error: describeError(err) };
  return { retry: true, attempt: attempt + 1, delayMs: backoffDelay(rules.backoff, attempt) };
}

/**
 * Whether attempt `attempt` is the last one allowed: its failure, or a handler still running on it when its
 * subscription's drain ran out (`outlivedDrain`), dead-letters the event.
 */
export function isLastAttempt(rules: DeliveryRules, attempt: number): boolean {
  return attempt >= rules.maxDeliveries;
}

/**
 * Whether attempt `attempt` of a redelivery is past the last one allowed. It counts deliveries that ended
 * with no outcome (their consumer died), so an event that kills every consumer it reaches is dead-lettered
 * after `maxDeliveries` of them instead of taking down consumer after consumer.
 */
export function pastLastAttempt(rules: DeliveryRules, attempt: number): boolean {
  return attempt > rules.maxDeliveries;
}

/** The dead letter of `event` after `attempts` attempts, the last of which ended with `error`. */
export function deadLetterOf(event: EventEnvelope, group: string, partition: number, attempts: number, error: string): DeadLetter {
  return { id: event.id, type: event.type, group, partition, attempts, error, event, deadAt: Date.now() };
}

/**
 * The dead letter of an event whose handler, on its last allowed delivery, was still running when its
 * subscription closed and the drain timeout ran out: that delivery counts, so the event is not run again.
 */
export function outlivedDrain(event: EventEnvelope, group: string, partition: number, attempts: number, drainMs: number): DeadLetter {
  const error = `TimeoutError: the handler was still running when its subscription closed (drainTimeoutMs ${drainMs}) on the last delivery maxDeliveries allows`;
  return deadLetterOf(event, group, partition, attempts, error);
}
