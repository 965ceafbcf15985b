/** The suite's tests of delivery: every event, the whole envelope, per-key order, fan-out, work sharing, concurrency, source. */
import { createEventBus, type EventEnvelope } from '../index.js';
import { conformanceEvents, type ConformanceBus, type Order } from './events.js';
import type { ConformanceCase } from './kit.js';
import { sleep, waitFor } from './wait.js';

const TRACEPARENT = '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01';

export const deliveryCases: ConformanceCase[] = [
  {
    name: 'delivers every published event at least once',
    async run({ bus, subscribe, subOpts, orders, timeout, expect }) {
      const b = await bus();
      const seen = new Set<number>();
      await subscribe(b, 'order.created', subOpts({ group: 'g', concurrency: 8 }), (e) => {
        seen.add(e.data.seq);
      });
      await Promise.all(orders(500).map((o) => b.publish('order.created', o)));
      await b.publishMany('order.created', orders(500, 500));
      await waitFor(() => seen.size === 1000, timeout, 'all 1000 events');
      expect(seen.size).toBe(1000);
    },
  },
  {
    name: 'hands handlers a complete envelope',
    async run({ bus, subscribe, subOpts, timeout, expect }) {
      const b = await bus();
      let got: EventEnvelope<Order> | undefined;
      await subscribe(b, 'order.created', subOpts({ group: 'g' }), (e) => {
        got = e;
      });
      const options = { key: 'customer-7', correlationId: 'corr-1', causationId: 'cause-1', headers: { traceparent: TRACEPARENT } };
      await b.publish('order.created', { orderId: 'o-1', amount: 10, seq: 1 }, options);
      await waitFor(() => got !== undefined, timeout, 'the event');
      expect(got).toMatchObject({ type: 'order.created', source: 'conformance', data: { orderId: 'o-1', amount: 10, seq: 1 }, ...options });
      expect(got!.id).toMatch(/^[0-9A-Z]{26}$/);
      expect(Math.abs(got!.time - Date.now())).toBeLessThan(60_000);
    },
  },
  {
    name: 'keeps per-key order within a partition',
    async run({ bus, subscribe, subOpts, timeout, expect }) {
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
    },
  },
  {
    name: 'fans out to every group',
    async run({ bus, subscribe, subOpts, orders, timeout }) {
      const b = await bus();
      const a = new Set<number>();
      const c = new Set<number>();
      await subscribe(b, 'order.created', subOpts({ group: 'billing' }), (e) => void a.add(e.data.seq));
      await subscribe(b, 'order.created', subOpts({ group: 'shipping' }), (e) => void c.add(e.data.seq));
      await b.publishMany('order.created', orders(200));
      await waitFor(() => a.size === 200 && c.size === 200, timeout, 'both groups to get 200 events');
    },
  },
  {
    name: 'shares the work among members of one group with no loss',
    async run({ target, bus, subscribe, subOpts, timeout, expect }) {
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
    },
  },
  {
    name: 'runs at most `concurrency` handlers of a subscription at once, and uses them all',
    async run({ bus, subscribe, subOpts, orders, timeout, expect }) {
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
    },
  },
  {
    name: "gives an event its publishing bus's service as source, on a transport shared by two buses",
    async run({ target, bus, track, subscribe, subOpts, timeout, expect }) {
      const transport = await target.transport();
      const consumer = await bus(transport);
      const publisher: ConformanceBus = track(await createEventBus({ service: 'other-service', events: conformanceEvents, transport: transport as { type: string }, logger: false }));
      const sources = new Map<number, string>();
      await subscribe(consumer, 'order.created', subOpts({ group: 'g' }), (e) => void sources.set(e.data.seq, e.source));
      await publisher.publish('order.created', { orderId: 'o-1', amount: 1, seq: 1 });
      await consumer.publish('order.created', { orderId: 'o-2', amount: 2, seq: 2 });
      await waitFor(() => sources.size === 2, timeout, 'both events');
      expect(Object.fromEntries(sources)).toEqual({ 1: 'other-service', 2: 'conformance' });
    },
  },
];
