/** The suite's tests of failures: retries, dead letters, errors that are not retried, and payloads refused at publish or consume. */
import { z } from 'zod';
import { createEventBus, defineEvents, NonRetryableError, UnknownEventError, ValidationError } from '../index.js';
import type { Order } from './events.js';
import type { ConformanceCase } from './kit.js';
import { sleep, waitFor } from './wait.js';

export const failureCases: ConformanceCase[] = [
  {
    name: 'retries a failing event with increasing attempts, then succeeds',
    async run({ bus, subscribe, subOpts, timeout, expect }) {
      const b = await bus();
      const attempts: number[] = [];
      let ok = false;
      await subscribe(b, 'order.created', subOpts({ group: 'g', maxDeliveries: 5 }), (e, ctx) => {
        if (e.data.seq !== 7) return;
        attempts.push(ctx.attempt);
        if (ctx.attempt < 3) throw new Error('flaky');
        ok = true;
      });
      await b.publish('order.created', { orderId: 'o-7', amount: 7, seq: 7 });
      await waitFor(() => ok, timeout, 'the third attempt');
      expect(attempts).toEqual([1, 2, 3]);
    },
  },
  {
    name: 'dead-letters an event after maxDeliveries while the rest flow',
    async run({ bus, subscribe, subOpts, orders, timeout, expect }) {
      const b = await bus();
      const good = new Set<number>();
      await subscribe(b, 'order.created', subOpts({ group: 'g', maxDeliveries: 3, concurrency: 4 }), (e) => {
        if (e.data.seq === 13) throw new Error('poison');
        good.add(e.data.seq);
      });
      await b.publishMany('order.created', orders(50));
      await waitFor(async () => (await b.deadLetters('order.created', { group: 'g' })).length === 1, timeout, 'one dead letter');
      await waitFor(() => good.size === 49, timeout, 'the 49 good events');
      const [dead] = await b.deadLetters('order.created', { group: 'g' });
      expect(dead).toMatchObject({ type: 'order.created', group: 'g', attempts: 3 });
      expect(dead!.error).toContain('poison');
      expect(dead!.event?.data).toMatchObject({ seq: 13 });
    },
  },
  {
    name: 'dead-letters a NonRetryableError at once',
    async run({ bus, subscribe, subOpts, timeout, expect }) {
      const b = await bus();
      const attempts: number[] = [];
      await subscribe(b, 'order.created', subOpts({ group: 'g', maxDeliveries: 5 }), (_e, ctx) => {
        attempts.push(ctx.attempt);
        throw new NonRetryableError('bad order');
      });
      await b.publish('order.created', { orderId: 'o-1', amount: 1, seq: 1 });
      await waitFor(async () => (await b.deadLetters('order.created')).length === 1, timeout, 'the dead letter');
      expect(attempts).toEqual([1]);
    },
  },
  {
    name: 'rejects invalid events before sending, and keeps working',
    async run({ bus, subscribe, subOpts, orders, timeout, expect }) {
      const b = await bus();
      const seen: unknown[] = [];
      await subscribe(b, 'order.created', subOpts({ group: 'g' }), (e) => void seen.push(e.data));
      // @ts-expect-error unknown event name is a compile error too
      await expect(b.publish('order.unknown', {})).rejects.toBeInstanceOf(UnknownEventError);
      // @ts-expect-error wrong payload type is a compile error too
      const bad = b.publish('order.created', { orderId: 1, amount: 'x', seq: 0 });
      await expect(bad).rejects.toBeInstanceOf(ValidationError);
      await expect(bad).rejects.toMatchObject({ code: 'ERR_VALIDATION', issues: expect.arrayContaining([expect.objectContaining({ path: ['orderId'] })]) });
      await expect(b.publishMany('order.created', [orders(1)[0]!, { orderId: 'x' } as never])).rejects.toBeInstanceOf(ValidationError);
      await b.publish('order.created', { orderId: 'ok', amount: 1, seq: 1 });
      await waitFor(() => seen.length >= 1, timeout, 'the valid event');
      await sleep(100);
      expect(seen).toEqual([{ orderId: 'ok', amount: 1, seq: 1 }]);
    },
  },
  {
    name: 'retries a handler that throws synchronously like one that rejects, with ctx naming group, consumer and partition',
    async run({ bus, subscribe, subOpts, timeout, expect }) {
      const b = await bus();
      const calls: { how: string; seq: number; attempt: number; group: string; consumer: string; partition: number }[] = [];
      await subscribe(b, 'order.created', subOpts({ group: 'g', consumer: 'c-1', maxDeliveries: 5, concurrency: 2 }), (e, ctx) => {
        const how = e.data.seq === 1 ? 'throws' : 'rejects';
        calls.push({ how, seq: e.data.seq, attempt: ctx.attempt, group: ctx.group, consumer: ctx.consumer, partition: ctx.partition });
        if (ctx.attempt < 3) {
          if (how === 'throws') throw new Error('sync failure');
          return Promise.reject(new Error('async failure'));
        }
        return undefined;
      });
      await b.publish('order.created', { orderId: 'o-1', amount: 1, seq: 1 }, { key: 'k-1' });
      await b.publish('order.created', { orderId: 'o-2', amount: 2, seq: 2 }, { key: 'k-2' });
      await waitFor(() => calls.filter((c) => c.attempt === 3).length === 2, timeout, 'both events to reach attempt 3');
      await sleep(200);
      for (const seq of [1, 2]) {
        const mine = calls.filter((c) => c.seq === seq);
        expect(mine.map((c) => c.attempt)).toEqual([1, 2, 3]);
        expect(new Set(mine.map((c) => c.partition)).size).toBe(1);
        for (const c of mine) {
          expect(c).toMatchObject({ group: 'g', consumer: 'c-1' });
          expect(Number.isInteger(c.partition) && c.partition >= 0 && c.partition < 4).toBe(true);
        }
      }
      expect(await b.deadLetters('order.created', { group: 'g' })).toEqual([]);
    },
  },
  {
    name: 'dead-letters with the original event, its id and partition, the error and the attempts',
    async run({ bus, subscribe, subOpts, timeout, expect }) {
      const b = await bus();
      let first: { id: string; partition: number } | undefined;
      await subscribe(b, 'order.created', subOpts({ group: 'g', maxDeliveries: 2 }), (e, ctx) => {
        first ??= { id: e.id, partition: ctx.partition };
        throw new TypeError('cannot charge o-9');
      });
      const before = Date.now();
      const options = { key: 'customer-9', correlationId: 'corr-9', headers: { tenant: 't-9' } };
      await b.publish('order.created', { orderId: 'o-9', amount: 9, seq: 9 }, options);
      await waitFor(async () => (await b.deadLetters('order.created', { group: 'g' })).length === 1, timeout, 'the dead letter');
      const [dead] = await b.deadLetters('order.created', { group: 'g' });
      expect(dead).toMatchObject({ id: first!.id, type: 'order.created', group: 'g', partition: first!.partition, attempts: 2 });
      expect(dead!.error).toContain('cannot charge o-9');
      expect(dead!.event).toMatchObject({ id: first!.id, type: 'order.created', source: 'conformance', data: { orderId: 'o-9', amount: 9, seq: 9 }, ...options });
      expect(dead!.deadAt).toBeGreaterThanOrEqual(before - 5_000);
      expect(dead!.deadAt).toBeLessThanOrEqual(Date.now() + 5_000);
    },
  },
  {
    name: 'dead-letters at once, without calling the handler, an event that fails the consumer schema',
    async run({ target, bus, track, subscribe, subOpts, timeout, expect }) {
      const transport = await target.transport();
      // Another producer whose schema for the type is looser (amount as a string).
      const looseEvents = defineEvents({ 'order.created': z.object({ orderId: z.string(), amount: z.string(), seq: z.number().int() }) });
      const loose = track(await createEventBus({ service: 'other-producer', events: looseEvents, transport: transport as { type: string }, logger: false }));
      const b = await bus(transport);
      const seen: number[] = [];
      await subscribe(b, 'order.created', subOpts({ group: 'g', maxDeliveries: 5 }), (e) => void seen.push(e.data.seq));
      await loose.publish('order.created', { orderId: 'o-1', amount: 'ten', seq: 1 });
      await loose.publish('order.created', { orderId: 'o-2', amount: '2', seq: 2 } as never);
      await b.publish('order.created', { orderId: 'o-3', amount: 3, seq: 3 });
      const settled = async () => (await b.deadLetters('order.created', { group: 'g' })).length === 2 && seen.length === 1;
      await waitFor(settled, timeout, 'two dead letters and the valid event');
      const dead = await b.deadLetters('order.created', { group: 'g' });
      expect(dead.map((d) => d.attempts)).toEqual([1, 1]);
      expect(dead.map((d) => (d.event?.data as Order).seq).sort()).toEqual([1, 2]);
      expect(dead[0]!.error).toMatch(/ValidationError/);
      expect(seen).toEqual([3]);
    },
  },
];
