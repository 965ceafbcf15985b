/**
 * Memory-transport behaviour beyond the shared conformance suite: brokers shared by name, partition
 * ownership across rebalances, the drain timeout, and isolation of what one handler sees from another.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { ConfigError, createEventBus, defineEvents, type EventBus } from '../../src/index.js';
import type { OutgoingEvent, SubscriptionSpec, TransportContext } from '../../src/transport.js';
import { silentLogger } from '../../src/logger.js';
import { partitionForKey } from '../../src/partition.js';
import { createMemoryTransport } from './index.js';
import { sleep, uniqueName, waitFor } from '../../test/helpers/wait.js';

const events = defineEvents({ 'o.made': z.object({ seq: z.number().int() }) });
type Bus = EventBus<typeof events>;

const open: Bus[] = [];
async function bus(service: string, transport: Record<string, unknown>, drainTimeoutMs?: number): Promise<Bus> {
  const b = await createEventBus({ service, events, transport: transport as { type: string }, drainTimeoutMs });
  open.push(b);
  return b;
}
afterEach(async () => {
  await Promise.allSettled(open.splice(0).map((b) => b.close()));
});

describe('memory transport', () => {
  it("gives an event the publishing bus's service as source, on a broker shared by name", async () => {
    const name = uniqueName('mem');
    const consumer = await bus('billing', { type: 'memory', name });
    const publisher = await bus('checkout', { type: 'memory', name });
    const live: string[] = [];
    await consumer.subscribe('o.made', { group: 'live' }, (e) => void live.push(e.source));
    await publisher.publish('o.made', { seq: 1 });
    await consumer.publish('o.made', { seq: 2 });
    await waitFor(() => live.length === 2, 5000, 'two events');
    expect(live.sort()).toEqual(['billing', 'checkout']);

    const replay = new Map<number, string>();
    await consumer.subscribe('o.made', { group: 'late', startFrom: '0' }, (e) => void replay.set(e.data.seq, e.source));
    await waitFor(() => replay.size === 2, 5000, 'the retained events');
    expect(Object.fromEntries(replay)).toEqual({ 1: 'checkout', 2: 'billing' });

    await consumer.subscribe('o.made', { group: 'dlq', startFrom: '0', maxDeliveries: 2, retry: { backoff: { initialMs: 1 } } }, () => {
      throw new Error('no');
    });
    await waitFor(async () => (await consumer.deadLetters('o.made', { group: 'dlq' })).length === 2, 5000, 'two dead letters');
    const dead = await consumer.deadLetters('o.made', { group: 'dlq' });
    expect(Object.fromEntries(dead.map((d) => [(d.event!.data as { seq: number }).seq, d.event!.source]))).toEqual({ 1: 'checkout', 2: 'billing' });
  });

  it('rejects a second bus on a shared broker with a different partition count (ConfigError naming both counts)', async () => {
    const name = uniqueName('mem');
    await bus('a', { type: 'memory', name, partitions: 2 });
    const err = await createEventBus({ service: 'b', events, transport: { type: 'memory', name, partitions: 8 } }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ConfigError);
    expect((err as ConfigError).message).toContain('transport.partitions is 8 for "o.made", but memory broker');
    expect((err as ConfigError).message).toContain('has 2 partitions recorded for it');
    // The broker is still usable by its first bus, and a matching bus (or one with no count set) still shares it.
    const same = await bus('c', { type: 'memory', name, partitions: 2 });
    expect((await bus('d', { type: 'memory', name })).transport.partitionsFor('o.made')).toBe(2);
    const seen: number[] = [];
    await open[0]!.subscribe('o.made', { group: 'g' }, (e) => void seen.push(e.data.seq));
    await same.publishMany('o.made', [{ seq: 1 }, { seq: 2 }], { key: (d) => `k${d.seq}` });
    await waitFor(() => seen.length === 2, 5000, 'both events');
  });

  it('keeps a partition with its owner until its running handler finishes when a member joins (per-key order, concurrency 1)', async () => {
    const b = await bus('s', { type: 'memory', partitions: 2 });
    const starts: string[] = [];
    let running = 0;
    let overlapped = false;
    const handler = (member: string) => async (e: { data: { seq: number } }) => {
      if (++running > 1) overlapped = true;
      starts.push(`${member}:${e.data.seq}`);
      await sleep(40);
      running--;
    };
    await b.subscribe('o.made', { group: 'g', consumer: 'a', concurrency: 1 }, handler('a'));
    // Every key on the partition that the second member takes over (partition 1 of 2).
    const key = ['k1', 'k2', 'k3', 'k4', 'k5', 'k6', 'x', 'y'].find((k) => partitionForKey(k, 2) === 1)!;
    await b.publishMany(
      'o.made',
      [1, 2, 3, 4].map((seq) => ({ seq })),
      { key },
    );
    await waitFor(() => starts.length === 1, 5000, 'the first event to start');
    await b.subscribe('o.made', { group: 'g', consumer: 'b', concurrency: 1 }, handler('b'));
    await waitFor(() => starts.length === 4 && running === 0, 5000, 'all four events');
    expect(overlapped).toBe(false);
    expect(starts.map((s) => s.split(':')[1])).toEqual(['1', '2', '3', '4']);
    expect(starts.slice(1).every((s) => s.startsWith('b:'))).toBe(true); // the partition did move, after event 1
  });

  it('returns events that outlived the drain timeout in their partition order', async () => {
    const b = await bus('s', { type: 'memory', partitions: 1 }, 50);
    const first: number[] = [];
    const sub = await b.subscribe('o.made', { group: 'g', consumer: 'a', concurrency: 4 }, async (e) => {
      first.push(e.data.seq);
      await sleep(2000);
    });
    await b.publishMany(
      'o.made',
      [1, 2, 3, 4, 5].map((seq) => ({ seq })),
    );
    await waitFor(() => first.length === 4, 5000, 'four handlers to start');
    await sub.close();
    const again: [number, number][] = [];
    await b.subscribe('o.made', { group: 'g', consumer: 'b', concurrency: 1 }, (e, ctx) => void again.push([e.data.seq, ctx.attempt]));
    await waitFor(() => again.length === 5, 5000, 'the five events on the other member');
    expect(again).toEqual([
      [1, 2],
      [2, 2],
      [3, 2],
      [4, 2],
      [5, 1],
    ]);
  });

  it("does not let one group's handler change the headers another group sees", async () => {
    const b = await bus('s', { type: 'memory' });
    const seen: Record<string, string>[] = [];
    let mutated = false;
    await b.subscribe('o.made', { group: 'first' }, (e) => {
      (e.headers as Record<string, string>)['x-added'] = 'by first';
      mutated = true;
    });
    await b.subscribe('o.made', { group: 'second' }, async (e) => {
      await waitFor(() => mutated, 5000, 'the first group');
      seen.push({ ...e.headers });
    });
    await b.publish('o.made', { seq: 1 }, { headers: { traceparent: '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01' } });
    await waitFor(() => seen.length === 1, 5000, 'the second group');
    expect(seen[0]).toEqual({ traceparent: '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01' });
  });

  it('a second close() of a subscription waits for the drain the first started', async () => {
    const ctx: TransportContext = { service: 's', logger: silentLogger, eventTypes: ['t'], serializer: () => JSON.stringify };
    const t = createMemoryTransport({ type: 'memory' }, ctx);
    let finished = false;
    const sub = await t.subscribe(spec({ drainTimeoutMs: 5000 }), async () => {
      await sleep(150);
      finished = true;
    });
    await t.write([{ type: 't', partition: 0, events: [outgoing(1)], bytes: 0 }]);
    await sleep(30);
    void sub.close();
    await sub.close();
    expect(finished).toBe(true);
    await t.close();
  });
});

function spec(o: Partial<SubscriptionSpec> = {}): SubscriptionSpec {
  return {
    type: 't',
    group: 'g',
    consumer: 'c',
    concurrency: 1,
    startFrom: '$',
    maxDeliveries: 5,
    backoff: { initialMs: 10, maxMs: 100, multiplier: 2, jitter: 0 },
    drainTimeoutMs: 1000,
    validateOnConsume: true,
    options: {},
    ...o,
  };
}

function outgoing(seq: number): OutgoingEvent {
  return { id: `id-${seq}`, type: 't', time: Date.now(), key: undefined, data: { seq }, json: undefined, partition: 0, correlationId: undefined, causationId: undefined, headers: undefined };
}
