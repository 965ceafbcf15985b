/**
 * The suite's tests of versioned event types (src/versions.ts): the version travels with the event through the
 * transport, a consumer receives older versions upcast to its latest, an older payload is checked against its
 * own version, and an event of a version the consumer does not know is dead-lettered naming both versions (and,
 * where the target can replay dead letters, delivered to an upgraded consumer after replay).
 */
import { z } from 'zod';
import { createEventBus, defineEvents, versioned, VERSION_HEADER, type EventEnvelope, type EventMap } from '../index.js';
import type { EventBus } from '../bus.js';
import type { ConformanceCase, ConformanceKit, TargetBlock } from './kit.js';
import { sleep, waitFor } from './wait.js';

const TYPE = 'order.revised';

const v1 = z.object({ orderId: z.string(), amount: z.number() });
const total = z.object({ amount: z.number(), currency: z.string() });
const v2 = {
  schema: z.object({ orderId: z.string(), total }),
  up: (o: z.output<typeof v1>) => {
    if (o.orderId === 'cannot-upcast') throw new Error(`no currency known for ${o.orderId}`);
    return { orderId: o.orderId, total: { amount: o.amount, currency: 'EUR' } };
  },
};
const v3 = { schema: z.object({ orderId: z.string(), total, lines: z.array(z.string()) }), up: (o: z.output<typeof v2.schema>) => ({ ...o, lines: [] }) };

/** The type's event maps as producers and consumers of each version declare it. */
export const versionEvents = {
  v1: defineEvents({ [TYPE]: v1 }),
  v2: defineEvents({ [TYPE]: versioned(v1, v2) }),
  v3: defineEvents({ [TYPE]: versioned(v1, v2, v3) }),
  /** A producer of version 1 whose schema is looser (amount as a string). */
  loose: defineEvents({ [TYPE]: z.object({ orderId: z.string(), amount: z.string() }) }),
};

/** A bus of `events` on `transport`, closed after the test. */
async function busOf<M extends EventMap>(k: ConformanceKit, events: M, transport: TargetBlock): Promise<EventBus<M>> {
  return k.track(await createEventBus({ service: 'conformance', events, transport: transport as { type: string }, logger: false }));
}

/** Subscribes group `group` of `b` to the type, collecting what handlers get. */
async function collect(k: ConformanceKit, b: EventBus<EventMap>, group: string, seen: EventEnvelope[]) {
  return b.subscribe(TYPE, k.subOpts({ group, maxDeliveries: 5 }) as never, (e) => void seen.push(e));
}

const byOrder = (a: EventEnvelope, b: EventEnvelope) => ((a.data as { orderId: string }).orderId < (b.data as { orderId: string }).orderId ? -1 : 1);

export const versionCases: ConformanceCase[] = [
  {
    name: 'a consumer of version 3 receives events of versions 1, 2 and 3 in the version 3 shape',
    async run(k) {
      const transport = await k.target.transport();
      const [p1, p2, c3] = [await busOf(k, versionEvents.v1, transport), await busOf(k, versionEvents.v2, transport), await busOf(k, versionEvents.v3, transport)];
      const seen: EventEnvelope[] = [];
      await collect(k, c3 as never, 'g', seen);
      await p1.publish(TYPE, { orderId: 'a', amount: 1 });
      await p2.publish(TYPE, { orderId: 'b', total: { amount: 2, currency: 'USD' } }, { headers: { tenant: 't-2' } });
      await c3.publish(TYPE, { orderId: 'c', total: { amount: 3, currency: 'GBP' }, lines: ['x'] });
      await waitFor(() => seen.length === 3, k.timeout, 'the three events');
      seen.sort(byOrder);
      k.expect(seen.map((e) => e.data)).toEqual([
        { orderId: 'a', total: { amount: 1, currency: 'EUR' }, lines: [] },
        { orderId: 'b', total: { amount: 2, currency: 'USD' }, lines: [] },
        { orderId: 'c', total: { amount: 3, currency: 'GBP' }, lines: ['x'] },
      ]);
      // The header names the version of the payload handed over, and other headers travel beside it.
      k.expect(seen.map((e) => e.headers?.[VERSION_HEADER])).toEqual(['3', '3', '3']);
      k.expect(seen[1]!.headers?.['tenant']).toBe('t-2');
      k.expect(await c3.deadLetters(TYPE, { group: 'g' })).toEqual([]);
    },
  },
  {
    name: 'dead-letters at once an older payload invalid against its own version and one whose upcast throws, while valid ones pass',
    async run(k) {
      const transport = await k.target.transport();
      const [loose, p1, c3] = [await busOf(k, versionEvents.loose, transport), await busOf(k, versionEvents.v1, transport), await busOf(k, versionEvents.v3, transport)];
      const seen: EventEnvelope[] = [];
      await collect(k, c3 as never, 'g', seen);
      await loose.publish(TYPE, { orderId: 'invalid-v1', amount: 'ten' });
      await p1.publish(TYPE, { orderId: 'cannot-upcast', amount: 1 });
      await p1.publish(TYPE, { orderId: 'valid-v1', amount: 2 });
      const settled = async () => (await c3.deadLetters(TYPE, { group: 'g' })).length === 2 && seen.length === 1;
      await waitFor(settled, k.timeout, 'two dead letters and the valid event');
      await sleep(100);
      k.expect(seen.map((e) => e.data)).toEqual([{ orderId: 'valid-v1', total: { amount: 2, currency: 'EUR' }, lines: [] }]);
      const dead = (await c3.deadLetters(TYPE, { group: 'g' })).sort((a, b) => ((a.event?.data as { orderId: string }).orderId < (b.event?.data as { orderId: string }).orderId ? -1 : 1));
      k.expect(dead.map((d) => [d.attempts, d.valid, (d.event?.data as { orderId: string }).orderId])).toEqual([
        [1, false, 'cannot-upcast'],
        [1, false, 'invalid-v1'],
      ]);
      k.expect(dead[0]!.error).toContain('from version 1 to 2 failed: no currency known for cannot-upcast');
      k.expect(dead[1]!.error).toMatch(/ValidationError/);
      k.expect(dead[1]!.error).toContain('"order.revised" version "1" does not match its schema');
      // Stored as published: the payload of version 1, with no version header.
      k.expect(dead[1]!.event?.data).toEqual({ orderId: 'invalid-v1', amount: 'ten' });
      k.expect(dead[1]!.event?.headers?.[VERSION_HEADER]).toBe(undefined);
    },
  },
  {
    name: 'dead-letters an event of a newer version naming both versions; an upgraded consumer reads it as valid (and gets it after replay)',
    async run(k) {
      const transport = await k.target.transport();
      const [c2, p3] = [await busOf(k, versionEvents.v2, transport), await busOf(k, versionEvents.v3, transport)];
      const seen: EventEnvelope[] = [];
      const sub = await collect(k, c2 as never, 'g', seen);
      await p3.publish(TYPE, { orderId: 'from-v3', total: { amount: 3, currency: 'GBP' }, lines: ['x'] });
      await c2.publish(TYPE, { orderId: 'from-v2', total: { amount: 2, currency: 'USD' } });
      const settled = async () => (await c2.deadLetters(TYPE, { group: 'g' })).length === 1 && seen.length === 1;
      await waitFor(settled, k.timeout, 'the dead letter and the version 2 event');
      k.expect(seen.map((e) => (e.data as { orderId: string }).orderId)).toEqual(['from-v2']);
      const [dead] = await c2.deadLetters(TYPE, { group: 'g' });
      k.expect(dead).toMatchObject({ attempts: 1, valid: false });
      k.expect(dead!.error).toContain('event order.revised is version 3; this consumer knows versions 1..2');
      // The consumer upgraded to version 3 reads the same letter as a valid event of its latest version.
      const [upgradedView] = await p3.deadLetters(TYPE, { group: 'g' });
      k.expect(upgradedView).toMatchObject({ valid: true, event: { data: { orderId: 'from-v3', lines: ['x'] } } });
      if (k.target.replayDeadLetters === undefined) return;
      await sub.close();
      const upgraded: EventEnvelope[] = [];
      await collect(k, p3 as never, 'g', upgraded);
      k.expect(await k.target.replayDeadLetters(p3, TYPE, 'g')).toBe(1);
      await waitFor(() => upgraded.length === 1, k.timeout, 'the replayed event');
      k.expect(upgraded[0]!.data).toEqual({ orderId: 'from-v3', total: { amount: 3, currency: 'GBP' }, lines: ['x'] });
      k.expect(await p3.deadLetters(TYPE, { group: 'g' })).toEqual([]);
    },
  },
];
