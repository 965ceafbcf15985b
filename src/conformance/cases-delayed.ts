/**
 * The suite's tests of delayed delivery (`delayMs`, `deliverAt`, `cancelScheduled`): a delayed event reaches each
 * group once, never before its due time, and soon after it (within the kit's timeout here; the tight bound is a
 * benchmark's); publishMany delays every event; a due time in the past delivers at once; a cancelled event is
 * never delivered; bad values are a ConfigError that sends nothing.
 */
import { ConfigError } from '../errors.js';
import type { ConformanceCase, ConformanceKit } from './kit.js';
import { sleep, waitFor } from './wait.js';

/** Delivery times by seq, per group, with the check that each seq came once. */
async function twoGroups(k: ConformanceKit, b: Awaited<ReturnType<ConformanceKit['bus']>>): Promise<Map<string, Map<number, number>>> {
  const got = new Map<string, Map<number, number>>();
  for (const group of ['g1', 'g2']) {
    const times = new Map<number, number>();
    got.set(group, times);
    await k.subscribe(b, 'order.created', k.subOpts({ group, concurrency: 8 }), (e) => {
      k.expect(times.has(e.data.seq)).toBe(false);
      times.set(e.data.seq, Date.now());
    });
  }
  return got;
}

const DELAY_MS = 400;

export const delayedCases: ConformanceCase[] = [
  {
    name: 'delivers a delayed event to each group once, not before its due time',
    async run(k) {
      const { bus, orders, timeout, expect } = k;
      const b = await bus();
      const got = await twoGroups(k, b);
      const before = Date.now();
      const id = await b.publish('order.created', orders(1)[0]!, { delayMs: DELAY_MS, key: 'k' });
      expect(id).toMatch(/^[0-9A-Z]{26}$/);
      await b.publish('order.created', orders(1, 1)[0]!, { key: 'k' });
      await waitFor(() => got.get('g1')!.has(1) && got.get('g2')!.has(1), timeout, 'the undelayed event');
      expect(got.get('g1')!.has(0)).toBe(false);
      await waitFor(() => got.get('g1')!.size === 2 && got.get('g2')!.size === 2, timeout + DELAY_MS, 'the delayed event in both groups');
      for (const times of got.values()) expect(times.get(0)!).toBeGreaterThanOrEqual(before + DELAY_MS);
      await sleep(200);
      for (const times of got.values()) expect(times.size).toBe(2);
    },
  },
  {
    name: 'publishMany with delayMs delays every event and resolves with their ids',
    async run(k) {
      const { bus, orders, timeout, expect } = k;
      const b = await bus();
      const got = await twoGroups(k, b);
      const before = Date.now();
      const ids = await b.publishMany('order.created', orders(50), { delayMs: DELAY_MS, key: (o) => o.orderId });
      expect(ids.length).toBe(50);
      expect(new Set(ids).size).toBe(50);
      await waitFor(() => got.get('g1')!.size === 50 && got.get('g2')!.size === 50, timeout + DELAY_MS, 'the 50 delayed events in both groups');
      for (const times of got.values()) for (const t of times.values()) expect(t).toBeGreaterThanOrEqual(before + DELAY_MS);
    },
  },
  {
    name: 'deliverAt takes a Date or epoch milliseconds; a due time in the past delivers at once',
    async run(k) {
      const { bus, orders, timeout, expect } = k;
      const b = await bus();
      const got = await twoGroups(k, b);
      const at = Date.now() + DELAY_MS;
      const [o0, o1, o2] = orders(3);
      await b.publish('order.created', o0!, { deliverAt: new Date(at) });
      await b.publish('order.created', o1!, { deliverAt: at });
      await b.publishMany('order.created', [o2!], { deliverAt: Date.now() - 60_000 });
      await waitFor(() => got.get('g1')!.has(2) && got.get('g2')!.has(2), timeout, 'the event due in the past');
      await waitFor(() => got.get('g1')!.size === 3 && got.get('g2')!.size === 3, timeout + DELAY_MS, 'the events due at a time');
      for (const times of got.values()) {
        expect(times.get(0)!).toBeGreaterThanOrEqual(at);
        expect(times.get(1)!).toBeGreaterThanOrEqual(at);
      }
    },
  },
  {
    name: 'cancelScheduled removes an event not yet due and says whether it did',
    async run(k) {
      const { bus, orders, timeout, expect } = k;
      const b = await bus();
      const got = await twoGroups(k, b);
      const [o0, o1] = orders(2);
      const cancelled = await b.publish('order.created', o0!, { delayMs: DELAY_MS });
      const kept = await b.publish('order.created', o1!, { delayMs: DELAY_MS });
      expect(await b.cancelScheduled('order.created', cancelled)).toBe(true);
      expect(await b.cancelScheduled('order.created', cancelled)).toBe(false);
      expect(await b.cancelScheduled('order.cancelled', kept)).toBe(false);
      await waitFor(() => got.get('g1')!.has(1) && got.get('g2')!.has(1), timeout + DELAY_MS, 'the event not cancelled');
      expect(await b.cancelScheduled('order.created', kept)).toBe(false);
      await sleep(DELAY_MS);
      for (const times of got.values()) expect([...times.keys()]).toEqual([1]);
    },
  },
  {
    name: 'bad delayMs or deliverAt is a ConfigError naming the option, and nothing is sent',
    async run(k) {
      const { bus, orders, expect } = k;
      const b = await bus();
      const got = await twoGroups(k, b);
      const o = orders(1)[0]!;
      const bad: [Record<string, unknown>, RegExp][] = [
        [{ delayMs: -1 }, /delayMs must be a finite number/],
        [{ delayMs: Number.NaN }, /delayMs must be a finite number/],
        [{ delayMs: '100' }, /delayMs must be a finite number/],
        [{ delayMs: 10, deliverAt: Date.now() }, /cannot be given with/],
        [{ deliverAt: 'tomorrow' }, /deliverAt must be a valid Date/],
        [{ deliverAt: new Date('nope') }, /deliverAt must be a valid Date/],
      ];
      for (const [options, message] of bad) {
        for (const call of [() => b.publish('order.created', o, options as never), () => b.publishMany('order.created', [o], options as never)]) {
          const err = await call().catch((e: unknown) => e);
          expect(err).toBeInstanceOf(ConfigError);
          expect((err as Error).message).toMatch(message);
        }
      }
      let refused: unknown;
      try {
        b.tryPublish('order.created', o, { delayMs: 10 } as never);
      } catch (err) {
        refused = err;
      }
      expect(refused).toBeInstanceOf(ConfigError);
      await sleep(300);
      for (const times of got.values()) expect(times.size).toBe(0);
    },
  },
];
