/**
 * A worker thread's handler failure, told to the main thread so the bus logs it as it logs a main-thread
 * consumer's (`SubscriptionSpec.observer`): the thread's engine reports through `workerObserver`, the message
 * crosses as `WorkerFailure`, and the group hands it to its member's observer with the error rebuilt.
 */
import type { EventEnvelope } from '../../src/envelope.js';
import type { DeliveryObserver } from '../../src/failure-log.js';
import type { FailureVerdict } from '../../src/delivery-rules.js';
import type { DeliveryContext } from '../../src/transport.js';

/** What crosses of the error: its class name, message, stack and a string or number `code`. */
export interface WorkerError {
  readonly name: string;
  readonly message: string;
  readonly stack?: string | undefined;
  readonly code?: string | number | undefined;
}

export interface WorkerFailure {
  readonly t: 'failed';
  readonly env: EventEnvelope;
  readonly ctx: DeliveryContext;
  readonly error: WorkerError;
  readonly verdict: FailureVerdict;
}

function plainError(err: unknown): WorkerError {
  if (!(err instanceof Error)) return { name: 'Error', message: String(err) };
  const code = (err as { code?: unknown }).code;
  return { name: err.name, message: err.message, stack: err.stack, code: typeof code === 'string' || typeof code === 'number' ? code : undefined };
}

/** The observer of a worker thread's engine: each failure goes to `send` (which clones the envelope). */
export function workerObserver(send: (make: (clone: (e: EventEnvelope) => EventEnvelope) => WorkerFailure) => void): DeliveryObserver {
  return {
    failed(env, ctx, err, verdict) {
      const context: DeliveryContext = { attempt: ctx.attempt, group: ctx.group, consumer: ctx.consumer, partition: ctx.partition };
      send((clone) => ({ t: 'failed', env: clone(env), ctx: context, error: plainError(err), verdict }));
    },
  };
}

/** The error of a worker's failure as an `Error` again, for the failure log. */
export function errorOf(e: WorkerError): Error {
  const err = new Error(e.message);
  err.name = e.name;
  err.stack = e.stack ?? `${e.name}: ${e.message}`;
  if (e.code !== undefined) (err as Error & { code?: string | number }).code = e.code;
  return err;
}
