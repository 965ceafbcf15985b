/**
 * Compile-time contract of versioned event types (`versioned`): `publish` takes the latest version's input,
 * handlers and valid dead letters see the latest version's output, and each `up` is typed from the previous
 * version's output to the next version's input. `npm run typecheck` fails if an `@ts-expect-error` below stops
 * being an error or an `expectTypeOf` stops holding.
 */
import { describe, expect, expectTypeOf, it } from 'vitest';
import { z } from 'zod';
import { createEventBus, defineEvents, versioned, type EventData, type EventEnvelope, type EventInput } from '../../src/index.js';

const v1 = z.object({ id: z.string(), total: z.number() });
const v2 = z.object({ id: z.string(), total: z.object({ amount: z.number(), currency: z.string() }) });
const v3 = z.object({ id: z.string(), total: z.object({ amount: z.number(), currency: z.string() }), placedAt: z.coerce.date() });

const events = defineEvents({
  'order.created': versioned(v1, { schema: v2, up: (o) => ({ id: o.id, total: { amount: o.total, currency: 'EUR' } }) }, { schema: v3, up: (o) => ({ ...o, placedAt: '1970-01-01T00:00:00.000Z' }) }),
  'user.signed-up': z.object({ email: z.string() }),
});
type Events = typeof events;
type Latest = { id: string; total: { amount: number; currency: string }; placedAt: Date };

describe('typed versioned events', () => {
  it("types publish with the latest version's input and handlers with its output", async () => {
    expectTypeOf<EventData<Events, 'order.created'>>().toEqualTypeOf<Latest>();
    expectTypeOf<EventInput<Events, 'order.created'>>().toEqualTypeOf<z.input<typeof v3>>();
    expectTypeOf<EventData<Events, 'user.signed-up'>>().toEqualTypeOf<{ email: string }>();
    const bus = await createEventBus({ service: 't', events, transport: { type: 'memory' }, logger: false });
    await bus.subscribe('order.created', { group: 'g' }, (e) => {
      expectTypeOf(e).toEqualTypeOf<EventEnvelope<Latest, 'order.created'>>();
      expectTypeOf(e.data.placedAt).toEqualTypeOf<Date>();
      // @ts-expect-error the handler sees the latest shape: total is an object, not version 1's number
      void (e.data.total + 1);
    });
    await bus.publish('order.created', { id: 'o-1', total: { amount: 1, currency: 'EUR' }, placedAt: '2026-01-01' });
    // @ts-expect-error publishing version 1's shape is a compile error
    await expect(bus.publish('order.created', { id: 'o-1', total: 1 })).rejects.toThrow();
    // @ts-expect-error publishing version 2's shape is a compile error (placedAt is missing)
    await expect(bus.publish('order.created', { id: 'o-1', total: { amount: 1, currency: 'EUR' } })).rejects.toThrow();
    // @ts-expect-error publishMany too
    await expect(bus.publishMany('order.created', [{ id: 'o-1', total: 1 }])).rejects.toThrow();
    for (const letter of await bus.deadLetters('order.created')) if (letter.valid) expectTypeOf(letter.event.data).toEqualTypeOf<Latest>();
    await bus.close();
  });

  it("types each up from the previous version's output to the next version's input", () => {
    versioned(v1, {
      schema: v2,
      up: (o) => {
        expectTypeOf(o).toEqualTypeOf<{ id: string; total: number }>();
        return { id: o.id, total: { amount: o.total, currency: 'EUR' } };
      },
    });
    // @ts-expect-error up must return the next version's input: total is an object there
    versioned(v1, { schema: v2, up: (o) => ({ id: o.id, total: o.total }) });
    const two = versioned(v1, { schema: v2, up: (o) => ({ id: o.id, total: { amount: o.total, currency: 'EUR' } }) });
    expectTypeOf(two.parse({ id: 'o-1', total: { amount: 1, currency: 'EUR' } })).toEqualTypeOf<z.output<typeof v2>>();
    // With version 1 only, versioned() is the schema itself.
    expectTypeOf(versioned(v1)).toEqualTypeOf<typeof v1>();
  });
});
