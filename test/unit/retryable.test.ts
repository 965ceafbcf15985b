/**
 * A handler's error says whether to retry it (`retryable: false`), whichever copy of the package made it:
 * a service whose ES module code runs the bus may throw `NonRetryableError` from the CommonJS build.
 */
import { createRequire } from 'node:module';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { createEventBus, defineEvents, NonRetryableError } from '../../src/index.js';
import { isRetryable } from '../../src/errors.js';
import { waitFor } from '../helpers/wait.js';

// The CommonJS build `npm test` makes before running the tests (npm run build).
const cjs = createRequire(import.meta.url)('../../dist/cjs/src/index.js') as { NonRetryableError: typeof NonRetryableError };

describe('isRetryable', () => {
  it('reads retryable from the error, not its class', () => {
    expect(cjs.NonRetryableError).not.toBe(NonRetryableError);
    expect(isRetryable(new cjs.NonRetryableError('no'))).toBe(false);
    expect(isRetryable(new NonRetryableError('no'))).toBe(false);
    expect(isRetryable(Object.assign(new Error('no'), { retryable: false }))).toBe(false);
    expect(isRetryable(new Error('again'))).toBe(true);
    expect(isRetryable('a string')).toBe(true);
  });

  it('a NonRetryableError of the CommonJS build dead-letters at once on the ES module bus', async () => {
    const events = defineEvents({ 'a.b': z.object({ n: z.number() }) });
    const bus = await createEventBus({ service: 's', events, transport: { type: 'memory' } });
    try {
      const attempts: number[] = [];
      await bus.subscribe('a.b', { group: 'g', maxDeliveries: 5, retry: { backoff: { initialMs: 1, maxMs: 1 } } }, (e, ctx) => {
        attempts.push(ctx.attempt);
        throw new cjs.NonRetryableError('bad order');
      });
      await bus.publish('a.b', { n: 1 });
      await waitFor(async () => (await bus.deadLetters('a.b')).length === 1, 5000, 'the dead letter');
      // Dead-lettered at its first failure, not retried up to maxDeliveries.
      expect(attempts).toEqual([1]);
    } finally {
      await bus.close();
    }
  });
});
