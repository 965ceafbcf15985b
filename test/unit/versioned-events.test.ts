/**
 * `versioned()` and the consumer-side check of versions beyond what the conformance suite states: bad
 * declarations, upcasting with `validateOnConsume` off, the version gate of plain and transforming types, a
 * version header that is not a number, publishing a versioned type on the noop transport, and the version header
 * refused in publish options.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { ConfigError, createEventBus, defineEvents, versioned, VERSION_HEADER, type EventEnvelope, type EventMap } from '../../src/index.js';
import { consumeCheck } from '../../src/consume-check.js';
import { uniqueName, waitFor } from '../helpers/wait.js';

const v1 = z.object({ id: z.string(), total: z.number() });
const v2 = {
  schema: z.object({ id: z.string(), total: z.object({ amount: z.number(), currency: z.string() }) }),
  up: (o: z.output<typeof v1>) => ({ id: o.id, total: { amount: o.total, currency: 'EUR' } }),
};
const open: { close(): Promise<void> }[] = [];
afterEach(async () => {
  await Promise.allSettled(open.splice(0).map((b) => b.close()));
});

async function memoryBus<M extends EventMap>(events: M, name: string, extra: Record<string, unknown> = {}) {
  const b = await createEventBus({ service: 't', events, transport: { type: 'memory', name }, logger: false, ...extra });
  open.push(b);
  return b;
}

const envelope = (data: unknown, headers?: Record<string, string>): EventEnvelope => ({ id: 'e-1', type: 'o', source: 's', time: 1, data, ...(headers ? { headers } : {}) });

describe('versioned event types', () => {
  it('refuses a version that is not a zod schema or a step without up, naming the version', () => {
    expect(() => versioned({} as never)).toThrow(ConfigError);
    expect(() => versioned(v1, { schema: v2.schema } as never)).toThrow(/version 2 must be \{ schema/);
    expect(() => versioned(v1, v2, { schema: 'x', up: () => ({}) } as never)).toThrow(/version 3 must be/);
    // The schema versioned() returns is a copy: the latest schema given stays a plain one.
    const marked = versioned(v1, v2);
    expect(marked).not.toBe(v2.schema);
    expect(consumeCheck(defineEvents({ o: v2.schema }), 'o', false)).toBeUndefined();
    expect(consumeCheck(defineEvents({ o: marked }), 'o', false)).toBeDefined();
  });

  it('upcasts older versions with validateOnConsume off, and leaves the latest unchecked', async () => {
    const name = uniqueName('ver');
    const older = await memoryBus(defineEvents({ o: v1 }), name);
    const consumer = await memoryBus(defineEvents({ o: versioned(v1, v2) }), name, { validateOnConsume: false });
    const seen: unknown[] = [];
    await consumer.subscribe('o', { group: 'g' }, (e) => void seen.push(e.data));
    await older.publish('o', { id: 'a', total: 1 });
    await consumer.publish('o', { id: 'b', total: { amount: 2, currency: 'USD' } });
    await waitFor(() => seen.length === 2, 5_000, 'both events');
    expect(seen).toEqual([
      { id: 'a', total: { amount: 1, currency: 'EUR' } },
      { id: 'b', total: { amount: 2, currency: 'USD' } },
    ]);
  });

  it('refuses versions a plain or transforming type does not know, and a version header that is not a positive integer', () => {
    const plain = consumeCheck(defineEvents({ o: v1 }), 'o')!;
    const transforming = consumeCheck(defineEvents({ o: v1.transform((o) => ({ ...o, seen: true })) }), 'o')!;
    const versionedCheck = consumeCheck(defineEvents({ o: versioned(v1, v2) }), 'o')!;
    for (const check of [plain, transforming]) {
      expect(() => check(envelope({ id: 'a', total: 1 }, { [VERSION_HEADER]: '2' }))).toThrow('event o is version 2; this consumer knows version 1 (event e-1)');
      expect(() => check(envelope({ id: 'a', total: 1 }, { [VERSION_HEADER]: '1', other: 'x' }))).not.toThrow();
    }
    expect(() => versionedCheck(envelope({ id: 'a', total: 1 }, { [VERSION_HEADER]: 'two' }))).toThrow('event o is of version "two" (not a positive integer); this consumer knows versions 1..2');
    expect(() => versionedCheck(envelope({ id: 'a', total: 1 }, { [VERSION_HEADER]: '0' }))).toThrow(/of version "0" \(not a positive integer\)/);
    // An upcast envelope names the latest version beside the latest data, its other headers kept.
    const e = envelope({ id: 'a', total: 1 }, { tenant: 't' });
    versionedCheck(e);
    expect(e).toMatchObject({ data: { id: 'a', total: { amount: 1, currency: 'EUR' } }, headers: { tenant: 't', [VERSION_HEADER]: '2' } });
  });

  it('publishes a versioned type on the noop transport', async () => {
    const b = await createEventBus({ service: 't', events: defineEvents({ o: versioned(v1, v2) }), transport: { type: 'noop' }, logger: false });
    open.push(b);
    await b.publish('o', { id: 'a', total: { amount: 1, currency: 'EUR' } });
    await b.publishMany('o', [{ id: 'b', total: { amount: 2, currency: 'EUR' } }], { headers: { tenant: 't' } });
    expect(b.stats()).toMatchObject({ events: 2, failedEvents: 0 });
  });

  it("writes the publisher's version header whatever the caller's headers say, so forwarded headers dead-letter nothing", async () => {
    const name = uniqueName('m');
    const plain = await memoryBus(defineEvents({ o: v1 }), name);
    const got: EventEnvelope[] = [];
    await plain.subscribe('o', { group: 'g' }, (e) => void got.push(e));
    // A handler of a v2 consumer forwarding event.headers to a plain (version 1) type, and the reverse.
    await plain.publish('o', { id: 'a', total: 1 }, { headers: { [VERSION_HEADER]: '2', tenant: 't' } });
    await plain.publishMany('o', [{ id: 'b', total: 2 }], { headers: { [VERSION_HEADER]: '7' } });
    await plain.idle({ timeoutMs: 5_000 });
    expect(got.map((e) => [e.data, e.headers])).toEqual([
      [{ id: 'a', total: 1 }, { tenant: 't' }],
      [{ id: 'b', total: 2 }, {}],
    ]);
    const newer = await memoryBus(defineEvents({ o: versioned(v1, v2) }), name);
    await newer.publish('o', { id: 'c', total: { amount: 3, currency: 'EUR' } }, { headers: { [VERSION_HEADER]: '1' } });
    const seen: EventEnvelope[] = [];
    await newer.subscribe('o', { group: 'h', startFrom: '0' }, (e) => void seen.push(e));
    await newer.idle({ timeoutMs: 5_000 });
    expect(seen.find((e) => (e.data as { id: string }).id === 'c')?.headers).toEqual({ [VERSION_HEADER]: '2' });
  });
});
