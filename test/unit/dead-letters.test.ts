/**
 * `bus.deadLetters(type)` checks each stored letter against the event's schema when read: a valid one's
 * `event.data` is the schema's output (as handlers get it), anything else is `valid: false` with `issues`.
 * The letters here are what a transport could hand back (JSON from a DLQ stream, entries others wrote).
 */
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { createEventBus, defineEvents, NonRetryableError, registerTransport, UnknownEventError } from '../../src/index.js';
import type { DeadLetter, Transport } from '../../src/transport-kit.js';
import { uniqueName, waitFor } from '../helpers/wait.js';

const events = defineEvents({
  'order.placed': z.object({ orderId: z.string(), amount: z.number().positive(), at: z.coerce.date() }),
  measured: z.object({ word: z.string() }).transform((o) => ({ length: o.word.length })),
});

const letter = (over: Partial<DeadLetter> & Record<string, unknown>): DeadLetter => ({
  id: 'e-1',
  type: 'order.placed',
  group: 'g',
  partition: 0,
  attempts: 1,
  error: 'Error: boom',
  event: undefined,
  deadAt: 1,
  ...over,
});
const envelope = (data: unknown, type = 'order.placed') => ({ id: 'e-1', type, source: 'other', time: 1, data });

/** A bus over a transport whose dead-letter queue holds `stored` (for any type: filtered by `type`). */
async function busWith(stored: DeadLetter[]) {
  const type = uniqueName('dlq-fixture');
  registerTransport(type, () => {
    const t: Transport = {
      type,
      capabilities: { encoding: 'none', maxInFlight: 1, maxEventBytes: 1 << 20 },
      connect: async () => {},
      partitionsFor: () => 1,
      write: async () => {},
      subscribe: async () => ({ close: async () => {} }),
      deadLetters: async (t) => stored.filter((d) => d.type === t),
      close: async () => {},
    };
    return t;
  });
  return createEventBus({ service: 's', events, transport: { type } });
}

describe('bus.deadLetters', () => {
  it("gives a valid letter's payload as the schema's output, keeping the envelope and transport fields", async () => {
    const bus = await busWith([letter({ event: { ...envelope({ orderId: 'o-1', amount: 5, at: '2024-01-02T03:04:05.000Z', extra: 1 }), key: 'k' }, ref: '0/1-0' })]);
    const [d] = await bus.deadLetters('order.placed');
    expect(d!.valid).toBe(true);
    if (!d!.valid) return;
    // JSON in the DLQ held a string; the declared payload type (z.output) is a Date, unknown keys stripped.
    expect(d!.event.data).toEqual({ orderId: 'o-1', amount: 5, at: new Date('2024-01-02T03:04:05.000Z') });
    expect(d!.event).toMatchObject({ id: 'e-1', type: 'order.placed', source: 'other', key: 'k' });
    expect(d).toMatchObject({ id: 'e-1', group: 'g', error: 'Error: boom', ref: '0/1-0' });
    await bus.close();
  });

  it('marks a payload that fails the schema invalid, with zod issues, and keeps the data as stored', async () => {
    const stored = { orderId: 'o-2', amount: 'ten', at: 'not a date' };
    const bus = await busWith([letter({ event: envelope(stored), error: 'ValidationError: ...' })]);
    const [d] = await bus.deadLetters('order.placed');
    expect(d).toMatchObject({ valid: false, error: 'ValidationError: ...' });
    if (d!.valid) return;
    expect(d!.event?.data).toEqual(stored);
    expect(d!.issues.map((i) => i.path)).toEqual([['amount'], ['at']]);
    await bus.close();
  });

  it('marks undecodable letters, a non-object event and an event of another type invalid', async () => {
    const bus = await busWith([
      letter({ raw: { data: '{oops' }, error: 'malformed entry: field "data" is not JSON' }),
      letter({ event: null as never }),
      letter({ event: envelope({ orderId: 'o-3', amount: 1, at: 0 }, 'order.cancelled') }),
    ]);
    const dead = await bus.deadLetters('order.placed');
    expect(dead.map((d) => d.valid)).toEqual([false, false, false]);
    expect(dead.map((d) => d.event)).toEqual([undefined, undefined, expect.objectContaining({ type: 'order.cancelled' })]);
    expect(dead[0]).toMatchObject({ raw: { data: '{oops' }, issues: [{ path: [], message: expect.stringMatching(/could not be decoded/) }] });
    expect(dead[1]).toMatchObject({ raw: null, issues: [{ message: expect.stringMatching(/not an object/) }] });
    expect(dead[2]).toMatchObject({ issues: [{ message: expect.stringMatching(/"order.cancelled", not "order.placed"/) }] });
    await bus.close();
  });

  it("trusts a transforming schema's letters as handlers do (its output is not input it can check)", async () => {
    const bus = await busWith([letter({ type: 'measured', event: envelope({ length: 3 }, 'measured') })]);
    const [d] = await bus.deadLetters('measured');
    expect(d).toMatchObject({ valid: true, event: { data: { length: 3 } } });
    await bus.close();
  });

  it('rejects an undeclared type with UnknownEventError', async () => {
    const bus = await busWith([]);
    await expect(bus.deadLetters('nope' as never)).rejects.toBeInstanceOf(UnknownEventError);
    await bus.close();
  });

  it("on the memory transport: a handler failure is a valid letter, a looser producer's payload an invalid one", async () => {
    const name = uniqueName('dlq-memory');
    const consumer = await createEventBus({ service: 'c', events, transport: { type: 'memory', name } });
    const loose = await createEventBus({
      service: 'p',
      events: defineEvents({ 'order.placed': z.object({ orderId: z.string(), amount: z.string(), at: z.string() }) }),
      transport: { type: 'memory', name },
    });
    await consumer.subscribe('order.placed', { group: 'g' }, (e) => {
      throw new NonRetryableError(`cannot charge ${e.data.orderId}`);
    });
    await consumer.publish('order.placed', { orderId: 'o-1', amount: 1, at: new Date(0) });
    await loose.publish('order.placed', { orderId: 'o-2', amount: 'ten', at: 'x' });
    await waitFor(async () => (await consumer.deadLetters('order.placed')).length === 2, 5000, 'two dead letters');
    const dead = await consumer.deadLetters('order.placed', { group: 'g' });
    expect(dead.map((d) => [d.valid, (d.event?.data as { orderId: string }).orderId])).toEqual([
      [true, 'o-1'],
      [false, 'o-2'],
    ]);
    expect(dead[1]!.error).toMatch(/ValidationError/);
    await Promise.all([consumer.close(), loose.close()]);
  });

  it("records a thrown plain object's message (and code), not '[object Object]'", async () => {
    const bus = await createEventBus({ service: 'c', events, transport: { type: 'memory', name: uniqueName('dlq-plain') } });
    let n = 0;
    await bus.subscribe('order.placed', { group: 'g', maxDeliveries: 1 }, () => {
      throw n++ === 0 ? { code: 'E_HTTP', message: 'upstream 503' } : { status: 503 };
    });
    await bus.publishMany('order.placed', [
      { orderId: 'o-1', amount: 1, at: new Date(0) },
      { orderId: 'o-2', amount: 1, at: new Date(0) },
    ]);
    await waitFor(async () => (await bus.deadLetters('order.placed')).length === 2, 5000, 'two dead letters');
    const dead = await bus.deadLetters('order.placed', { group: 'g' });
    expect(dead.map((d) => d.error)).toEqual(['Error (E_HTTP): upstream 503', '{"status":503}']);
    await bus.close();
  });

  it('on the memory transport: an event whose handler outlived the drain on its last allowed delivery is dead-lettered, not run again', async () => {
    const bus = await createEventBus({ service: 'c', events, transport: { type: 'memory', name: uniqueName('dlq-drain') }, drainTimeoutMs: 50 });
    const log: string[] = [];
    const first = await bus.subscribe('order.placed', { group: 'g', maxDeliveries: 1 }, (e, ctx) => {
      log.push(`first ${e.data.orderId} attempt ${ctx.attempt}`);
      return new Promise(() => {}); // never finishes
    });
    await bus.publish('order.placed', { orderId: 'o-1', amount: 1, at: new Date(0) });
    await waitFor(() => log.length === 1, 5000, 'the first delivery');
    await first.close();
    await bus.subscribe('order.placed', { group: 'g', maxDeliveries: 1 }, (e, ctx) => void log.push(`second ${e.data.orderId} attempt ${ctx.attempt}`));
    await bus.idle({ timeoutMs: 2000 });
    // The first member's delivery counts: the second member does not run it as attempt 2 of 1.
    expect(log).toEqual(['first o-1 attempt 1']);
    const dead = await bus.deadLetters('order.placed', { group: 'g' });
    expect(dead.map((d) => [d.id.length, d.attempts, d.valid])).toEqual([[26, 1, true]]);
    expect(dead[0]!.error).toMatch(/still running when its subscription closed \(drainTimeoutMs 50\)/);
    await bus.close();
  });

  it('refuses a bad limit or group with a ConfigError naming it', async () => {
    const { createEventBus: create, defineEvents: define, ConfigError: CE } = await import('../../src/index.js');
    const { z: zod } = await import('zod');
    const bus = await create({ service: 's', events: define({ a: zod.object({ x: zod.number() }) }), transport: { type: 'memory' } });
    for (const bad of [{ limit: -1 }, { limit: 'x' }, { group: '' }, { lmit: 5 }]) {
      const err = await bus.deadLetters('a', bad as never).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(CE);
      expect((err as Error).message).toContain('deadLetters options.');
    }
    expect(await bus.deadLetters('a', { limit: 5 })).toEqual([]);
    await bus.close();
  });
});
