import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { createEventBus, defineEvents } from '../../src/index.js';
import { waitFor } from '../helpers/wait.js';

describe('schemas that transform values', () => {
  it('are found through wrappers, objects, arrays, unions, preprocess and codecs; plain ones are not', () => {
    const events = defineEvents({
      plain: z.object({ a: z.string().trim().default('x'), b: z.array(z.number().int()).optional(), c: z.string().toLowerCase().normalize(), d: z.coerce.date() }),
      nested: z.object({ a: z.array(z.union([z.number(), z.string().transform((s) => s.length)])).optional() }),
      pre: z.preprocess((v) => (typeof v === 'string' ? Number(v) : v), z.number()),
      codec: z.object({ at: z.codec(z.iso.datetime(), z.date(), { decode: (s) => new Date(s), encode: (d) => d.toISOString() }) }),
      // Nested or indirect transforms, which the bus must detect too: a transform inside z.lazy, a pipe into a coercion,
      // a custom overwrite (not known to be idempotent).
      lazy: z.object({ a: z.lazy(() => z.string().transform((s) => s.length)) }),
      piped: z.object({ n: z.string().pipe(z.coerce.number()) }),
      overwrite: z.object({ n: z.number().overwrite((n) => n + 1) }),
    });
    expect([...events.transforming]).toEqual(['nested', 'pre', 'codec', 'lazy', 'piped', 'overwrite']);
  });

  it('a non-idempotent overwrite and a pipe into a coercion reach handlers as published, once applied', async () => {
    const events = defineEvents({
      bumped: z.object({ n: z.number().overwrite((n) => n + 1) }),
      piped: z.object({ n: z.string().pipe(z.coerce.number()) }),
    });
    const bus = await createEventBus({ service: 't', events, transport: { type: 'memory' } });
    const got: unknown[] = [];
    await bus.subscribe('bumped', { group: 'g', maxDeliveries: 1 }, (e) => void got.push(e.data));
    await bus.subscribe('piped', { group: 'g', maxDeliveries: 1 }, (e) => void got.push(e.data));
    await bus.publish('bumped', { n: 1 });
    await bus.publish('piped', { n: '7' });
    await bus.idle();
    // Each transform is applied once, at publish: not again on consume (n + 2), and the piped 7 is not
    // validated again as a string.
    expect(got).toEqual([{ n: 2 }, { n: 7 }]);
    expect(await bus.deadLetters('piped')).toEqual([]);
    await bus.close();
  });

  it('reach consumers with the published output instead of failing the consumer-side check', async () => {
    const events = defineEvents({
      measured: z.object({ word: z.string().transform((s) => s.length) }),
      plain: z.object({ n: z.number() }),
    });
    const bus = await createEventBus({ service: 't', events, transport: { type: 'memory' } });
    const got: unknown[] = [];
    await bus.subscribe('measured', { group: 'g', maxDeliveries: 1 }, (e) => void got.push(e.data));
    await bus.subscribe('plain', { group: 'g', maxDeliveries: 1 }, (e) => void got.push(e.data));
    await bus.publish('measured', { word: 'abc' });
    await bus.publish('plain', { n: 1 });
    await waitFor(() => got.length === 2, 5000, 'both events handled');
    expect(got).toEqual([{ word: 3 }, { n: 1 }]);
    expect(await bus.deadLetters('measured')).toEqual([]);
    await bus.close();
  });
});
