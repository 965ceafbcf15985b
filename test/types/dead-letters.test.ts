/**
 * Compile-time contract of `bus.deadLetters(type)`: a letter narrowed on `valid` has the event's declared
 * payload type (z.output of its schema, as handlers get it); otherwise `data` is `unknown`, because a dead
 * letter may hold a payload that never passed the schema. `npm run typecheck` fails if an
 * `@ts-expect-error` below stops being an error or an `expectTypeOf` stops holding.
 */
import { describe, expect, expectTypeOf, it } from 'vitest';
import { z } from 'zod';
import { createEventBus, defineEvents, type EventDeadLetter, type EventEnvelope, type InvalidDeadLetter, type ValidationIssue, type ValidDeadLetter } from '../../src/index.js';
import type { DeadLetter } from '../../src/transport-kit.js';

const events = defineEvents({
  'order.placed': z.object({ orderId: z.string(), amount: z.number(), at: z.coerce.date() }),
  'user.deleted': z.object({ userId: z.string() }),
});
type Events = typeof events;
type Placed = { orderId: string; amount: number; at: Date };

describe('typed dead letters', () => {
  it('types a letter per event: the schema output once narrowed on valid, unknown otherwise', async () => {
    const bus = await createEventBus({ service: 't', events, transport: { type: 'memory' } });
    const letters = await bus.deadLetters('order.placed', { group: 'g', limit: 10 });
    expectTypeOf(letters).toEqualTypeOf<EventDeadLetter<Events, 'order.placed'>[]>();
    expectTypeOf(letters).toEqualTypeOf<(ValidDeadLetter<Placed, 'order.placed'> | InvalidDeadLetter)[]>();
    for (const letter of letters) {
      // Before narrowing, the payload may be anything: the letter may have failed validation.
      expectTypeOf(letter.event?.data).toEqualTypeOf<unknown>();
      // @ts-expect-error not known to be an order before narrowing
      void letter.event?.data.orderId;
      if (letter.valid) {
        expectTypeOf(letter.event).toEqualTypeOf<EventEnvelope<Placed, 'order.placed'>>();
        expectTypeOf(letter.event.data.at).toEqualTypeOf<Date>(); // z.output: coerced, not the JSON string
        expectTypeOf(letter.type).toEqualTypeOf<'order.placed'>();
        // @ts-expect-error a field of another event
        void letter.event.data.userId;
        // @ts-expect-error valid letters carry no issues
        void letter.issues;
      } else {
        expectTypeOf(letter.event).toEqualTypeOf<EventEnvelope<unknown, string> | undefined>();
        expectTypeOf(letter.issues).toEqualTypeOf<readonly ValidationIssue[]>();
        // @ts-expect-error an invalid letter's payload is unknown
        void letter.event?.data.orderId;
      }
      // Fields every letter has.
      expectTypeOf(letter).toMatchTypeOf<Pick<DeadLetter, 'id' | 'group' | 'partition' | 'attempts' | 'error' | 'deadAt' | 'raw'>>();
    }
    const users = await bus.deadLetters('user.deleted');
    const first = users[0];
    if (first?.valid) expectTypeOf(first.event.data).toEqualTypeOf<{ userId: string }>();
    // @ts-expect-error unknown event name
    await expect(bus.deadLetters('order.deleted')).rejects.toMatchObject({ code: 'ERR_UNKNOWN_EVENT' });
    expect(letters).toEqual([]);
    await bus.close();
  });

  it('types letters in a function generic over the map, like EventHandler', () => {
    const ids = <K extends 'order.placed' | 'user.deleted'>(letters: EventDeadLetter<Events, K>[]): string[] => letters.flatMap((l) => (l.valid ? [l.event.id] : []));
    expect(ids([])).toEqual([]);
  });
});
