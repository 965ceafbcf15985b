/**
 * The delivery contract, stated once. Every transport that can be subscribed to runs this suite:
 * at-least-once delivery, per-key order within a partition, fan-out to groups, work sharing inside a
 * group, retry with backoff, dead-lettering after maxDeliveries, close() draining in-flight handlers,
 * and validation errors that send nothing; suite-lifecycle.ts holds its second half (where a group starts,
 * closing, idle()).
 */
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import {
  ClosedError,
  createEventBus,
  defineEvents,
  NonRetryableError,
  UnknownEventError,
  ValidationError,
  type DeliveryContext,
  type EventBus,
  type EventEnvelope,
  type Subscription,
} from '../../src/index.js';
import { sleep, uniqueName, waitFor } from '../helpers/wait.js';
import { conformanceEvents } from './events.js';
import { lifecycleTests } from './suite-lifecycle.js';

export interface ConformanceTarget {
  name: string;
  /** A fresh, isolated transport config block (unique prefix) for each call. */
  transport: () => Record<string, unknown> | Promise<Record<string, unknown>>;
  /** Extra subscribe options for this transport (e.g. short block/idle times). */
  subscribeOptions?: Record<string, unknown>;
  setup?: () => Promise<void>;
  teardown?: () => Promise<void>;
  /** How long to wait for deliveries. @default 10000 */
  timeoutMs?: number;
  /**
   * In-process transports, whose group members own partitions: transport options that keep 8,000 events for
   * a group created later. Runs the test of members that subscribe together sharing that backlog.
   */
  partitionOwners?: { retain: Record<string, unknown> };
  /**
   * How a test's handler is subscribed, when not with `bus.subscribe` itself: native worker threads run a
   * bridge module that calls the handler on the main thread (worker-bridge.ts).
   */
  subscribeVia?: (bus: Bus, type: 'order.created', options: Record<string, unknown>, handler: (e: EventEnvelope<Order>, ctx: DeliveryContext) => unknown) => Promise<Subscription>;
}

export { conformanceEvents };

export type Bus = EventBus<typeof conformanceEvents>;
export type Order = { orderId: string; amount: number; seq: number };

export function describeConformance(target: ConformanceTarget): void {
  describe(`conformance: ${target.name}`, () => {
    const timeout = target.timeoutMs ?? 10_000;
    const open: Bus[] = [];
    const fast = { retry: { backoff: { initialMs: 20, maxMs: 100, multiplier: 2, jitter: 0 } } };
    const subOpts = (o: { group: string } & Record<string, unknown>) => ({ ...target.subscribeOptions, ...fast, ...o });
    const subscribe = (b: Bus, type: 'order.created', options: Record<string, unknown>, handler: (e: EventEnvelope<Order>, ctx: DeliveryContext) => unknown): Promise<Subscription> =>
      target.subscribeVia ? target.subscribeVia(b, type, options, handler) : b.subscribe(type, options as never, handler);

    async function bus(transport?: Record<string, unknown>, extra: Record<string, unknown> = {}): Promise<Bus> {
      const b = await createEventBus({
        service: 'conformance',
        events: conformanceEvents,
        transport: (transport ?? (await target.transport())) as { type: string },
        ...extra,
      });
      open.push(b);
      return b;
    }
    const orders = (n: number, from = 0): Order[] => Array.from({ length: n }, (_, i) => ({ orderId: `o-${from + i}`, amount: from + i, seq: from + i }));

    beforeAll(async () => {
      await target.setup?.();
    });
    afterEach(async () => {
      await Promise.allSettled(open.splice(0).map((b) => b.close()));
    });
    afterAll(async () => {
      await target.teardown?.();
    });

    it('delivers every published event at least once', async () => {
      const b = await bus();
      const seen = new Set<number>();
      await subscribe(b, 'order.created', subOpts({ group: 'g', concurrency: 8 }), (e) => {
        seen.add(e.data.seq);
      });
      await Promise.all(orders(500).map((o) => b.publish('order.created', o)));
      await b.publishMany('order.created', orders(500, 500));
      await waitFor(() => seen.size === 1000, timeout, 'all 1000 events');
      expect(seen.size).toBe(1000);
    });

    it('hands handlers a complete envelope', async () => {
      const b = await bus();
      let got: EventEnvelope<Order> | undefined;
      await subscribe(b, 'order.created', subOpts({ group: 'g' }), (e) => {
        got = e;
      });
      await b.publish(
        'order.created',
        { orderId: 'o-1', amount: 10, seq: 1 },
        {
          key: 'customer-7',
          correlationId: 'corr-1',
          causationId: 'cause-1',
          headers: { traceparent: '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01' },
        },
      );
      await waitFor(() => got !== undefined, timeout, 'the event');
      expect(got).toMatchObject({
        type: 'order.created',
        source: 'conformance',
        data: { orderId: 'o-1', amount: 10, seq: 1 },
        key: 'customer-7',
        correlationId: 'corr-1',
        causationId: 'cause-1',
        headers: { traceparent: '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01' },
      });
      expect(got!.id).toMatch(/^[0-9A-Z]{26}$/);
      expect(Math.abs(got!.time - Date.now())).toBeLessThan(60_000);
    });

    it('keeps per-key order within a partition', async () => {
      const b = await bus();
      const byKey = new Map<string, number[]>();
      await subscribe(b, 'order.created', subOpts({ group: 'g', concurrency: 1 }), (e) => {
        const list = byKey.get(e.key!) ?? [];
        list.push(e.data.seq);
        byKey.set(e.key!, list);
      });
      const keys = ['a', 'b', 'c', 'd', 'e'];
      const sends: Promise<void>[] = [];
      for (let i = 0; i < 500; i++) sends.push(b.publish('order.created', { orderId: `o-${i}`, amount: i, seq: i }, { key: keys[i % 5] }));
      await Promise.all(sends);
      await waitFor(() => [...byKey.values()].reduce((n, l) => n + l.length, 0) >= 500, timeout, '500 keyed events');
      for (const k of keys) {
        const seqs = byKey.get(k)!;
        expect(seqs).toEqual([...seqs].sort((x, y) => x - y));
        expect(new Set(seqs).size).toBe(100);
      }
    });

    it('fans out to every group', async () => {
      const b = await bus();
      const a = new Set<number>();
      const c = new Set<number>();
      await subscribe(b, 'order.created', subOpts({ group: 'billing' }), (e) => void a.add(e.data.seq));
      await subscribe(b, 'order.created', subOpts({ group: 'shipping' }), (e) => void c.add(e.data.seq));
      await b.publishMany('order.created', orders(200));
      await waitFor(() => a.size === 200 && c.size === 200, timeout, 'both groups to get 200 events');
    });

    it('shares the work among members of one group with no loss', async () => {
      const transport = await target.transport();
      const b1 = await bus(transport);
      const b2 = await bus(transport);
      const counts = [0, 0];
      const seen = new Set<number>();
      const handler = (i: number) => async (e: EventEnvelope<Order>) => {
        counts[i]!++;
        seen.add(e.data.seq);
        await sleep(1);
      };
      await subscribe(b1, 'order.created', subOpts({ group: 'workers', consumer: 'c1', concurrency: 4 }), handler(0));
      await subscribe(b2, 'order.created', subOpts({ group: 'workers', consumer: 'c2', concurrency: 4 }), handler(1));
      const keys = Array.from({ length: 16 }, (_, i) => `k${i}`);
      // In four rounds, each handled before the next: a member that had not started reading when a round
      // came (a loaded machine) may leave all of it to the other, but not every round.
      for (let round = 0; round < 4; round++) {
        const sends: Promise<void>[] = [];
        for (let i = round * 100; i < (round + 1) * 100; i++) sends.push(b1.publish('order.created', { orderId: `o-${i}`, amount: i, seq: i }, { key: keys[i % 16] }));
        await Promise.all(sends);
        await waitFor(() => seen.size === (round + 1) * 100, timeout, `round ${round + 1} of 100 events across members`);
      }
      expect(counts[0]! + counts[1]!).toBeGreaterThanOrEqual(400);
      expect(counts[0]).toBeGreaterThan(0);
      expect(counts[1]).toBeGreaterThan(0);
    });

    it('retries a failing event with increasing attempts, then succeeds', async () => {
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
    });

    it('dead-letters an event after maxDeliveries while the rest flow', async () => {
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
    });

    it('dead-letters a NonRetryableError at once', async () => {
      const b = await bus();
      const attempts: number[] = [];
      await subscribe(b, 'order.created', subOpts({ group: 'g', maxDeliveries: 5 }), (_e, ctx) => {
        attempts.push(ctx.attempt);
        throw new NonRetryableError('bad order');
      });
      await b.publish('order.created', { orderId: 'o-1', amount: 1, seq: 1 });
      await waitFor(async () => (await b.deadLetters('order.created')).length === 1, timeout, 'the dead letter');
      expect(attempts).toEqual([1]);
    });

    it('close() waits for in-flight handlers to finish', async () => {
      const b = await bus();
      let started = 0;
      let finished = 0;
      await subscribe(b, 'order.created', subOpts({ group: 'g', concurrency: 4 }), async () => {
        started++;
        await sleep(150);
        finished++;
      });
      await b.publishMany('order.created', orders(4));
      await waitFor(() => started > 0, timeout, 'a handler to start');
      await b.close();
      expect(finished).toBe(started);
    });

    it('rejects invalid events before sending, and keeps working', async () => {
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
    });

    it('rejects publishing after close with ClosedError', async () => {
      const b = await bus();
      await b.close();
      await expect(b.publish('order.created', orders(1)[0]!)).rejects.toBeInstanceOf(ClosedError);
    });

    it('a group that starts from 0 gets events published before it existed', async () => {
      const b = await bus();
      await subscribe(b, 'order.created', subOpts({ group: 'early' }), () => {});
      await b.publishMany('order.created', orders(20));
      const seen = new Set<number>();
      await subscribe(b, 'order.created', subOpts({ group: uniqueName('late'), startFrom: '0' }), (e) => void seen.add(e.data.seq));
      await waitFor(() => seen.size === 20, timeout, 'the late group to read history');
    });

    it('retries a handler that throws synchronously like one that rejects, with ctx naming group, consumer and partition', async () => {
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
    });

    it('runs at most `concurrency` handlers of a subscription at once, and uses them all', async () => {
      const b = await bus();
      let running = 0;
      let peak = 0;
      let done = 0;
      await subscribe(b, 'order.created', subOpts({ group: 'g', concurrency: 3 }), async () => {
        peak = Math.max(peak, ++running);
        await sleep(30);
        running--;
        done++;
      });
      await b.publishMany('order.created', orders(24));
      await waitFor(() => done === 24, timeout, 'the 24 events');
      expect(peak).toBe(3);
    });

    it('dead-letters with the original event, its id and partition, the error and the attempts', async () => {
      const b = await bus();
      let first: { id: string; partition: number } | undefined;
      await subscribe(b, 'order.created', subOpts({ group: 'g', maxDeliveries: 2 }), (e, ctx) => {
        first ??= { id: e.id, partition: ctx.partition };
        throw new TypeError('cannot charge o-9');
      });
      const before = Date.now();
      await b.publish('order.created', { orderId: 'o-9', amount: 9, seq: 9 }, { key: 'customer-9', correlationId: 'corr-9', headers: { tenant: 't-9' } });
      await waitFor(async () => (await b.deadLetters('order.created', { group: 'g' })).length === 1, timeout, 'the dead letter');
      const [dead] = await b.deadLetters('order.created', { group: 'g' });
      expect(dead).toMatchObject({ id: first!.id, type: 'order.created', group: 'g', partition: first!.partition, attempts: 2 });
      expect(dead!.error).toContain('cannot charge o-9');
      expect(dead!.event).toMatchObject({
        id: first!.id,
        type: 'order.created',
        source: 'conformance',
        data: { orderId: 'o-9', amount: 9, seq: 9 },
        key: 'customer-9',
        correlationId: 'corr-9',
        headers: { tenant: 't-9' },
      });
      expect(dead!.deadAt).toBeGreaterThanOrEqual(before - 5_000);
      expect(dead!.deadAt).toBeLessThanOrEqual(Date.now() + 5_000);
    });

    it('dead-letters at once, without calling the handler, an event that fails the consumer schema', async () => {
      const transport = await target.transport();
      // Another producer whose schema for the type is looser (amount as a string).
      const loose = await createEventBus({
        service: 'other-producer',
        events: defineEvents({ 'order.created': z.object({ orderId: z.string(), amount: z.string(), seq: z.number().int() }) }),
        transport: transport as { type: string },
      });
      open.push(loose as unknown as Bus);
      const b = await bus(transport);
      const seen: number[] = [];
      await subscribe(b, 'order.created', subOpts({ group: 'g', maxDeliveries: 5 }), (e) => void seen.push(e.data.seq));
      await loose.publish('order.created', { orderId: 'o-1', amount: 'ten', seq: 1 });
      await loose.publish('order.created', { orderId: 'o-2', amount: '2', seq: 2 } as never);
      await b.publish('order.created', { orderId: 'o-3', amount: 3, seq: 3 });
      await waitFor(async () => (await b.deadLetters('order.created', { group: 'g' })).length === 2 && seen.length === 1, timeout, 'two dead letters and the valid event');
      const dead = await b.deadLetters('order.created', { group: 'g' });
      expect(dead.map((d) => d.attempts)).toEqual([1, 1]);
      expect(dead.map((d) => (d.event?.data as Order).seq).sort()).toEqual([1, 2]);
      expect(dead[0]!.error).toMatch(/ValidationError/);
      expect(seen).toEqual([3]);
    });

    it("gives an event its publishing bus's service as source, on a transport shared by two buses", async () => {
      const transport = await target.transport();
      const consumer = await bus(transport);
      const publisher = (await createEventBus({ service: 'other-service', events: conformanceEvents, transport: transport as { type: string } })) as Bus;
      open.push(publisher);
      const sources = new Map<number, string>();
      await subscribe(consumer, 'order.created', subOpts({ group: 'g' }), (e) => void sources.set(e.data.seq, e.source));
      await publisher.publish('order.created', { orderId: 'o-1', amount: 1, seq: 1 });
      await consumer.publish('order.created', { orderId: 'o-2', amount: 2, seq: 2 });
      await waitFor(() => sources.size === 2, timeout, 'both events');
      expect(Object.fromEntries(sources)).toEqual({ 1: 'other-service', 2: 'conformance' });
    });

    lifecycleTests({ target, timeout, bus, subscribe, subOpts, orders });
  });
}
