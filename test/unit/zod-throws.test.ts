import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { createEventBus, defineEvents, ValidationError } from '../../src/index.js';

describe('schemas zod cannot run synchronously, or that throw while parsing', () => {
  const events = defineEvents({
    // An async refinement: zod's synchronous parse throws instead of returning issues.
    'async.refined': z.object({ s: z.string().refine(async (s) => s.length > 0) }),
    // Both sides parse, but their outputs cannot be merged: zod throws.
    'bad.intersection': z.intersection(z.object({ x: z.string() }), z.object({ x: z.string().transform((s) => s + '!') })),
  });

  it('publish, publishMany and tryPublish fail with the typed ValidationError, and nothing is sent', async () => {
    const bus = await createEventBus({ service: 's', events, transport: { type: 'memory' } });
    await expect(bus.publish('async.refined', { s: 'x' })).rejects.toBeInstanceOf(ValidationError);
    await expect(bus.publish('bad.intersection', { x: 'y' })).rejects.toBeInstanceOf(ValidationError);
    await expect(bus.publishMany('async.refined', [{ s: 'x' }])).rejects.toMatchObject({ code: 'ERR_VALIDATION', message: expect.stringContaining('async.refined') });
    expect(() => bus.tryPublish('bad.intersection', { x: 'y' })).toThrow(ValidationError);
    expect(bus.stats().events).toBe(0);
    await bus.close();
  });
});
