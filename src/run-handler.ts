import type { DeliveryContext, DeliveryHandler } from './transport.js';
import type { EventEnvelope } from './envelope.js';

/**
 * Runs a handler and reports its outcome through `done(err)`: synchronously for a handler that returns
 * a non-promise, when the promise settles otherwise. No promise is created for synchronous handlers.
 */
export function runHandler(handler: DeliveryHandler, event: EventEnvelope, ctx: DeliveryContext, done: (err: unknown, failed: boolean) => void): void {
  let result: void | Promise<void>;
  try {
    result = handler(event, ctx);
  } catch (err) {
    done(err, true);
    return;
  }
  if (result !== undefined && result !== null && typeof (result as Promise<void>).then === 'function') {
    (result as Promise<void>).then(
      () => done(undefined, false),
      (err: unknown) => done(err, true),
    );
  } else {
    done(undefined, false);
  }
}

/** Resolves after `ms`, or rejects never: used to bound drains. Returns a cancel function too. */
export function delay(ms: number): { promise: Promise<void>; cancel: () => void } {
  let timer: NodeJS.Timeout | undefined;
  const promise = new Promise<void>((resolve) => {
    timer = setTimeout(resolve, ms);
  });
  return { promise, cancel: () => clearTimeout(timer) };
}
