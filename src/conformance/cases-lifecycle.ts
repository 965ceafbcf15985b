/**
 * The suite's tests of a subscription's and a bus's life: where a new group starts, closing subscriptions and
 * buses (draining, giving up at the drain timeout, refusing afterwards), idle(), and members that subscribe
 * together.
 */
import { ClosedError, TimeoutError } from '../index.js';
import type { ConformanceCase } from './kit.js';
import { sleep, uniqueName, waitFor } from './wait.js';

export const lifecycleCases: ConformanceCase[] = [
  {
    name: 'close() waits for in-flight handlers to finish',
    async run({ bus, subscribe, subOpts, orders, timeout, expect }) {
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
    },
  },
  {
    name: 'rejects publishing after close with ClosedError',
    async run({ bus, orders, expect }) {
      const b = await bus();
      await b.close();
      await expect(b.publish('order.created', orders(1)[0]!)).rejects.toBeInstanceOf(ClosedError);
    },
  },
  {
    name: 'a group that starts from 0 gets events published before it existed',
    async run({ bus, subscribe, subOpts, orders, timeout }) {
      const b = await bus();
      await subscribe(b, 'order.created', subOpts({ group: 'early' }), () => {});
      await b.publishMany('order.created', orders(20));
      const seen = new Set<number>();
      await subscribe(b, 'order.created', subOpts({ group: uniqueName('late'), startFrom: '0' }), (e) => void seen.add(e.data.seq));
      await waitFor(() => seen.size === 20, timeout, 'the late group to read history');
    },
  },
  {
    name: 'a group that starts from $ gets only events published after it subscribed',
    async run({ bus, subscribe, subOpts, orders, timeout, expect }) {
      const b = await bus();
      await b.publishMany('order.created', orders(10));
      const seen = new Set<number>();
      await subscribe(b, 'order.created', subOpts({ group: 'new', startFrom: '$' }), (e) => void seen.add(e.data.seq));
      await b.publishMany('order.created', orders(10, 10));
      await waitFor(() => seen.size >= 10, timeout, 'the 10 later events');
      await sleep(300);
      expect([...seen].sort((x, y) => x - y)).toEqual(orders(10, 10).map((o) => o.seq));
    },
  },
  {
    name: 'a closed subscription gets nothing more while other groups do',
    async run({ bus, subscribe, subOpts, orders, timeout, expect }) {
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
    },
  },
  {
    name: 'close() while handlers run resolves after they finish; later publishes and subscribes reject with ClosedError',
    async run({ bus, subscribe, subOpts, orders, timeout, expect }) {
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
    },
  },
  {
    name: 'close() gives up on a handler past drainTimeoutMs, and the event is delivered again to another member',
    async run({ target, bus, subscribe, subOpts, timeout, expect }) {
      const transport = await target.transport();
      const b1 = await bus(transport, { drainTimeoutMs: 200 });
      const b2 = await bus(transport);
      const attempts: [string, number][] = [];
      let release: () => void = () => {};
      const stuck = new Promise<void>((resolve) => (release = resolve));
      const sub = await subscribe(b1, 'order.created', subOpts({ group: 'g', consumer: 'stuck' }), async (_e, ctx) => {
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
    },
  },
  {
    name: 'idle() resolves once every group of the bus finished every event, retries and dead letters included',
    async run({ bus, subscribe, subOpts, orders, timeout, expect }) {
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
    },
  },
  {
    name: 'idle() rejects with TimeoutError naming the group whose handler has not returned, then resolves once it has',
    async run({ bus, subscribe, subOpts, orders, timeout, expect }) {
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
    },
  },
];

/** Members that subscribe together share a retained backlog by partition (`ConformanceTarget.partitionOwners`). */
export function partitionOwnersCase(retain: Record<string, unknown>): ConformanceCase {
  return {
    name: 'members that subscribe together share a retained backlog by partition, none inside subscribe()',
    async run({ target, bus, subscribe, subOpts, orders, timeout, expect }) {
      const b = await bus({ ...(await target.transport()), partitions: 4, ...retain });
      await b.publishMany('order.created', orders(8000));
      const per = [0, 0, 0, 0];
      const seen = new Set<number>();
      const member = (k: number) =>
        subscribe(b, 'order.created', subOpts({ group: 'together', consumer: `m${k}`, startFrom: '0' }), (e) => {
          per[k]!++;
          seen.add(e.data.seq);
        });
      await Promise.all(per.map((_, k) => member(k)));
      expect(per).toEqual([0, 0, 0, 0]); // nothing is delivered inside subscribe()
      await waitFor(() => seen.size === 8000, timeout, 'every retained event');
      expect(per).toEqual([2000, 2000, 2000, 2000]); // round-robin partitions, one per member
    },
  };
}
