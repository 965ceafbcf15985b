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
  UnknownEventError,
  ValidationError,
  type EventBus,
  type EventEnvelope,
} from '../../src/index.js';
import { sleep, uniqueName, waitFor } from '../helpers/wait.js';

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
}

export const conformanceEvents = defineEvents({
  'order.created': z.object({ orderId: z.string(), amount: z.number(), seq: z.number().int() }),
  'order.cancelled': z.object({ orderId: z.string() }),
});

type Bus = EventBus<typeof conformanceEvents>;
type Order = { orderId: string; amount: number; seq: number };

export function describeConformance(target: ConformanceTarget): void {
  describe(`conformance: ${target.name}`, () => {
    const timeout = target.timeoutMs ?? 10_000;
    const open: Bus[] = [];
    const fast = { retry: { backoff: { initialMs: 20, maxMs: 100, multiplier: 2, jitter: 0 } } };
    const subOpts = (o: { group: string } & Record<string, unknown>) => ({ ...target.subscribeOptions, ...fast, ...o });

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
    const orders = (n: number, from = 0): Order[] =>
      Array.from({ length: n }, (_, i) => ({ orderId: `o-${from + i}`, amount: from + i, seq: from + i }));

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
      await b.subscribe('order.created', subOpts({ group: 'g', concurrency: 8 }), (e) => {
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
      await b.subscribe('order.created', subOpts({ group: 'g' }), (e) => {
        got = e;
      });
      await b.publish('order.created', { orderId: 'o-1', amount: 10, seq: 1 }, {
        key: 'customer-7',
        correlationId: 'corr-1',
        causationId: 'cause-1',
        headers: { traceparent: '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01' },
      });
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
      await b.subscribe('order.created', subOpts({ group: 'g', concurrency: 1 }), (e) => {
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
      await b.subscribe('order.created', subOpts({ group: 'billing' }), (e) => void a.add(e.data.seq));
      await b.subscribe('order.created', subOpts({ group: 'shipping' }), (e) => void c.add(e.data.seq));
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
      await b1.subscribe('order.created', subOpts({ group: 'workers', consumer: 'c1', concurrency: 4 }), handler(0));
      await b2.subscribe('order.created', subOpts({ group: 'workers', consumer: 'c2', concurrency: 4 }), handler(1));
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
      await b.subscribe('order.created', subOpts({ group: 'g', maxDeliveries: 5 }), (e, ctx) => {
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
      await b.subscribe('order.created', subOpts({ group: 'g', maxDeliveries: 3, concurrency: 4 }), (e) => {
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
      await b.subscribe('order.created', subOpts({ group: 'g', maxDeliveries: 5 }), (_e, ctx) => {
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
      await b.subscribe('order.created', subOpts({ group: 'g', concurrency: 4 }), async () => {
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
      await b.subscribe('order.created', subOpts({ group: 'g' }), (e) => void seen.push(e.data));
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
      await b.subscribe('order.created', subOpts({ group: 'early' }), () => {});
      await b.publishMany('order.created', orders(20));
      const seen = new Set<number>();
      await b.subscribe('order.created', subOpts({ group: uniqueName('late'), startFrom: '0' }), (e) => void seen.add(e.data.seq));
      await waitFor(() => seen.size === 20, timeout, 'the late group to read history');
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
            b.subscribe('order.created', subOpts({ group: 'together', consumer: `m${k}`, startFrom: '0' }), (e) => {
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
