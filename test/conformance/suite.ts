/**
 * The delivery contract, stated once. Every transport that can be subscribed to runs this suite:
 * at-least-once delivery, per-key order within a partition, fan-out to groups, work sharing inside a
 * group, retry with backoff, dead-lettering after maxDeliveries, close() draining in-flight handlers,
 * and validation errors that send nothing.
 */
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import {
  ClosedError,
  createEventBus,
  defineEvents,
  NonRetryableError,
  TimeoutError,
  UnknownEventError,
  ValidationError,
  type DeliveryContext,
  type EventBus,
  type EventEnvelope,
  type Subscription,
} from '../../src/index.js';
import { sleep, uniqueName, waitFor } from '../helpers/wait.js';
import { conformanceEvents } from './events.js';

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

type Bus = EventBus<typeof conformanceEvents>;
type Order = { orderId: string; amount: number; seq: number };

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

    it('a group that starts from $ gets only events published after it subscribed', async () => {
      const b = await bus();
      await b.publishMany('order.created', orders(10));
      const seen = new Set<number>();
      await subscribe(b, 'order.created', subOpts({ group: 'new', startFrom: '$' }), (e) => void seen.add(e.data.seq));
      await b.publishMany('order.created', orders(10, 10));
      await waitFor(() => seen.size >= 10, timeout, 'the 10 later events');
      await sleep(300);
      expect([...seen].sort((x, y) => x - y)).toEqual(orders(10, 10).map((o) => o.seq));
    });

    it('a closed subscription gets nothing more while other groups do', async () => {
      const b = await bus();
      const closedOnes: number[] = [];
      const other = new Set<number>();
      const sub = await subscribe(b, 'order.created', subOpts({ group: 'leaving' }), (e) => void closedOnes.push(e.data.seq));
      await subscribe(b, 'order.created', subOpts({ group: 'staying' }), (e) => void other.add(e.data.seq));
      await b.publish('order.created', { orderId: 'o-0', amount: 0, seq: 0 });
      await waitFor(() => closedOnes.length === 1 && other.size === 1, timeout, 'the first event in both groups');
      await sub.close();
      await sub.close(); // idempotent
      await b.publishMany('order.created', orders(20, 1));
      await waitFor(() => other.size === 21, timeout, 'the other group to get the rest');
      await sleep(300);
      expect(closedOnes).toEqual([0]);
    });

    it('close() while handlers run resolves after they finish; later publishes and subscribes reject with ClosedError', async () => {
      const b = await bus();
      const finished: number[] = [];
      let started = 0;
      await subscribe(b, 'order.created', subOpts({ group: 'g', concurrency: 4 }), async (e) => {
        started++;
        await sleep(200);
        finished.push(e.data.seq);
      });
      await b.publishMany('order.created', orders(4));
      await waitFor(() => started === 4, timeout, 'four handlers to start');
      await b.close();
      expect(finished.sort()).toEqual([0, 1, 2, 3]);
      await expect(b.publish('order.created', orders(1)[0]!)).rejects.toBeInstanceOf(ClosedError);
      await expect(b.publishMany('order.created', orders(2))).rejects.toBeInstanceOf(ClosedError);
      await expect(subscribe(b, 'order.created', subOpts({ group: 'g2' }), () => {})).rejects.toBeInstanceOf(ClosedError);
      await b.close(); // idempotent
    });

    it('close() gives up on a handler past drainTimeoutMs, and the event is delivered again to another member', async () => {
      const transport = await target.transport();
      const b1 = await bus(transport);
      const b2 = await bus(transport);
      const attempts: [string, number][] = [];
      let release: () => void = () => {};
      const stuck = new Promise<void>((resolve) => (release = resolve));
      const sub = await subscribe(b1, 'order.created', subOpts({ group: 'g', consumer: 'stuck', drainTimeoutMs: 200 }), async (_e, ctx) => {
        attempts.push(['stuck', ctx.attempt]);
        await stuck;
      });
      await b1.publish('order.created', { orderId: 'o-1', amount: 1, seq: 1 });
      await waitFor(() => attempts.length === 1, timeout, 'the handler to start');
      await sub.close(); // resolves although the handler still runs
      await subscribe(b2, 'order.created', subOpts({ group: 'g', consumer: 'other' }), (_e, ctx) => void attempts.push(['other', ctx.attempt]));
      await waitFor(() => attempts.length === 2, timeout, 'the event on the other member');
      release();
      expect(attempts[1]![0]).toBe('other');
      expect(attempts[1]![1]).toBeGreaterThanOrEqual(2);
    });

    it('idle() resolves once every group of the bus finished every event, retries and dead letters included', async () => {
      const b = await bus();
      const done = new Set<number>();
      let poisonCalls = 0;
      await subscribe(b, 'order.created', subOpts({ group: 'idle-a', concurrency: 4, maxDeliveries: 3 }), async (e, ctx) => {
        if (e.data.seq % 50 === 7) {
          poisonCalls++;
          throw new Error('poison');
        }
        if (ctx.attempt === 1 && e.data.seq % 5 === 0) throw new Error('first attempt fails');
        await sleep(e.data.seq % 2);
        done.add(e.data.seq);
      });
      let other = 0;
      await subscribe(b, 'order.created', subOpts({ group: 'idle-b' }), () => void other++);
      await b.publishMany('order.created', orders(300));
      await b.idle({ timeoutMs: timeout });
      // Read at once, with no waiting: idle() resolved only after all of it.
      expect(done.size).toBe(294);
      expect(poisonCalls).toBe(18);
      expect((await b.deadLetters('order.created', { group: 'idle-a' })).length).toBe(6);
      expect(other).toBeGreaterThanOrEqual(300);
      await b.idle({ type: 'order.created', timeoutMs: timeout }); // nothing left: resolves again
    });

    it('idle() rejects with TimeoutError naming the group whose handler has not returned, then resolves once it has', async () => {
      const b = await bus(undefined, { drainTimeoutMs: 200 });
      let release!: () => void;
      const gate = new Promise<void>((r) => (release = r));
      await subscribe(b, 'order.created', subOpts({ group: 'idle-stuck' }), () => gate);
      await b.publish('order.created', orders(1)[0]!);
      const err = await b.idle({ timeoutMs: 300 }).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(TimeoutError);
      expect((err as Error).message).toMatch(/"order\.created" group "idle-stuck": [1-9]/);
      release();
      await b.idle({ timeoutMs: timeout });
    });

    if (target.partitionOwners) {
      const retain = target.partitionOwners.retain;
      it('members that subscribe together share a retained backlog by partition, none inside subscribe()', async () => {
        const b = await bus({ ...(await target.transport()), partitions: 4, ...retain });
        await b.publishMany('order.created', orders(8000));
        const per = [0, 0, 0, 0];
        const seen = new Set<number>();
        await Promise.all(
          per.map((_, k) =>
            subscribe(b, 'order.created', subOpts({ group: 'together', consumer: `m${k}`, startFrom: '0' }), (e) => {
              per[k]!++;
              seen.add(e.data.seq);
            }),
          ),
        );
        expect(per).toEqual([0, 0, 0, 0]); // nothing is delivered inside subscribe()
        await waitFor(() => seen.size === 8000, timeout, 'every retained event');
        expect(per).toEqual([2000, 2000, 2000, 2000]); // round-robin partitions, one per member
      });
    }
  });
}
