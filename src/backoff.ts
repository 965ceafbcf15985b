import type { BackoffOptions } from './transport.js';

/** Delay before the next attempt after attempt number `attempt` (1-based) failed: exponential, capped, jittered. */
export function backoffDelay(backoff: BackoffOptions, attempt: number): number {
  const base = Math.min(backoff.maxMs, backoff.initialMs * backoff.multiplier ** Math.max(0, attempt - 1));
  const spread = base * backoff.jitter;
  return Math.max(0, Math.round(base - spread + Math.random() * 2 * spread));
}
