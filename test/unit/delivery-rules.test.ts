/** The delivery rules every transport applies (src/delivery-rules.ts), through `eventlane/transport`. */
import { describe, expect, it } from 'vitest';
import { NonRetryableError, ValidationError } from '../../src/index.js';
import { afterFailure, deadLetterOf, isLastAttempt, pastLastAttempt } from '../../src/transport-kit.js';

const rules = { maxDeliveries: 3, backoff: { initialMs: 100, maxMs: 1000, multiplier: 2, jitter: 0 } };

describe('delivery rules', () => {
  it('a failed attempt with attempts left is retried as the next attempt after its backoff', () => {
    expect(afterFailure(rules, 1, new Error('boom'))).toEqual({ retry: true, attempt: 2, delayMs: 100 });
    expect(afterFailure(rules, 2, new Error('boom'))).toEqual({ retry: true, attempt: 3, delayMs: 200 });
  });

  it('the last attempt allowed is dead-lettered with the error described', () => {
    expect(afterFailure(rules, 3, new TypeError('bad'))).toEqual({ retry: false, error: 'TypeError: bad' });
  });

  it('a non-retryable error is dead-lettered on any attempt', () => {
    expect(afterFailure(rules, 1, new NonRetryableError('no')).retry).toBe(false);
    expect(afterFailure(rules, 1, new ValidationError('order.created', [])).retry).toBe(false);
    // Marked by its `retryable` field, as a NonRetryableError of another copy of the package is.
    expect(afterFailure(rules, 1, Object.assign(new Error('foreign'), { retryable: false })).retry).toBe(false);
  });

  it('jitter spreads the delay around the backoff, within the jitter fraction', () => {
    const jittered = { ...rules, backoff: { ...rules.backoff, jitter: 0.5 } };
    for (let i = 0; i < 200; i++) {
      const v = afterFailure(jittered, 2, new Error('x'));
      if (!v.retry) throw new Error('expected a retry');
      expect(v.delayMs).toBeGreaterThanOrEqual(100);
      expect(v.delayMs).toBeLessThanOrEqual(300);
    }
  });

  it('attempt maxDeliveries is the last; a redelivery after consumers died is past it as attempt maxDeliveries + 1', () => {
    expect(pastLastAttempt(rules, 3)).toBe(false);
    expect(pastLastAttempt(rules, 4)).toBe(true);
    expect(isLastAttempt(rules, 2)).toBe(false);
    expect(isLastAttempt(rules, 3)).toBe(true);
  });

  it('a dead letter carries the event, its group, partition, attempts and error', () => {
    const event = { id: 'e1', type: 'order.created', source: 's', time: 1, data: {} };
    const dl = deadLetterOf(event as never, 'g', 2, 3, 'Error: x');
    expect(dl).toMatchObject({ id: 'e1', type: 'order.created', group: 'g', partition: 2, attempts: 3, error: 'Error: x', event });
    expect(typeof dl.deadAt).toBe('number');
  });
});
