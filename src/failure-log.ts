/**
 * What the bus logs of deliveries (a `DeliveryObserver` per subscription, called by the delivery engine of
 * every transport): a handler failure that leads to a retry (`info`, or `warn` when the next attempt is the
 * last one allowed), and a dead-lettered event (`warn`), each with the event's id, type, group, partition and
 * attempt and the error with its stack. Lines go through a `LimitedLog`, so a failure storm cannot flood the
 * log; URLs in messages and stacks are stripped of credentials.
 */
import type { FailureVerdict } from './delivery-rules.js';
import type { EventEnvelope } from './envelope.js';
import type { LimitedLog } from './log-limit.js';
import { redactUrls } from './redact.js';
import type { DeliveryContext } from './transport.js';

/** What a delivery engine reports of the deliveries it runs (`SubscriptionSpec.observer`). */
export interface DeliveryObserver {
  /**
   * The handler of delivery `ctx` of `env` failed with `err` (or outlived its subscription's drain), and
   * `verdict` is what becomes of the event.
   */
  failed(env: EventEnvelope, ctx: DeliveryContext, err: unknown, verdict: FailureVerdict): void;
}

/**
 * An error as a log field (`error`, not pino's `err`, whose serializer names the class of a plain object): its
 * class, message and stack (credentials stripped), and its code when it has one.
 */
export function errorField(err: unknown): Record<string, unknown> {
  if (!(err instanceof Error)) return { name: typeof err, message: redactUrls(String(err)) };
  const out: Record<string, unknown> = { name: err.name, message: redactUrls(err.message) };
  if (err.stack !== undefined) out['stack'] = redactUrls(err.stack);
  const code = (err as { code?: unknown }).code;
  if (code !== undefined) out['code'] = code;
  return out;
}

export function failureLog(log: LimitedLog, maxDeliveries: number): DeliveryObserver {
  return {
    failed(env, ctx, err, verdict) {
      const fields = { id: env.id, type: env.type, group: ctx.group, partition: ctx.partition, attempt: ctx.attempt, error: errorField(err) };
      if (!verdict.retry) {
        log.log('warn', { ...fields, maxDeliveries }, 'event dead-lettered');
        return;
      }
      const last = verdict.attempt >= maxDeliveries;
      log.log(last ? 'warn' : 'info', { ...fields, nextAttempt: verdict.attempt, delayMs: verdict.delayMs }, 'handler failed; the event will be retried');
    },
  };
}
