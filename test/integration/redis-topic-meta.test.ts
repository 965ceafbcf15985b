/**
 * The partition count of a type recorded with the transport (`<prefix>:{<type>:0}:meta`): a bus that sets no
 * partitions uses it, a bus configured with another count is refused, and a raise through the admin reaches
 * running consumers and producers.
 */
import { describe, expect, it } from 'vitest';
import { ConfigError, createEventBus, type EventBus } from '../../src/index.js';
import { openRedisStreamsAdmin } from '../../transports/redis-streams/index.js';
import { uniquePrefix } from '../helpers/redis-server.js';
import { waitFor } from '../helpers/wait.js';
import { events, fastRead, orders, redisForFile } from './redis-common.js';

const r = redisForFile();

async function bus(prefix: string, partitions?: number, extra: Record<string, unknown> = {}): Promise<EventBus<typeof events>> {
  const transport = { type: 'redis-streams' as const, url: r.server.url, prefix, ...(partitions === undefined ? {} : { partitions }), ...extra };
  const b = await createEventBus({ service: 'meta', events, transport });
  r.cleanup.push(() => b.close());
  return b;
}

describe('redis-streams: partition counts recorded with the transport', () => {
  it('a consumer with no partitions set gets every event of a producer configured with 4, and idle() waits for all', async () => {
    const prefix = uniquePrefix('meta-repro');
    const producer = await bus(prefix, 4);
    const consumer = await bus(prefix);
    const seen = new Set<number>();
    await consumer.subscribe('order.created', { group: 'g', ...fastRead }, (e) => void seen.add(e.data.seq));
    await producer.publishMany('order.created', orders(100));
    await consumer.idle({ timeoutMs: 10_000 });
    expect(seen.size).toBe(100);
  });

  it('records the count once, as JSON with the wire format version, in the slot of partition 0', async () => {
    const prefix = uniquePrefix('meta-key');
    const [a, b] = await Promise.all([bus(prefix), bus(prefix)]);
    expect(JSON.parse((await r.raw.get(`${prefix}:{order.created:0}:meta`))!)).toEqual({ v: 1, partitions: 1 });
    expect(a.transport.partitionsFor('order.created')).toBe(1);
    expect(b.transport.partitionsFor('order.created')).toBe(1);
  });

  it('refuses a bus configured with another count, naming both counts, and writes nothing', async () => {
    const prefix = uniquePrefix('meta-mismatch');
    const producer = await bus(prefix, 4);
    const err = await bus(prefix, 2).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ConfigError);
    expect((err as Error).message).toMatch(/transport\.partitions is 2 for "order\.created", but 4 partitions are recorded/);
    expect((err as Error).message).toContain('admin.setPartitions');
    const topic = await bus(prefix, undefined, { topics: { 'audit.logged': { partitions: 3 } } }).catch((e: unknown) => e);
    expect((topic as ConfigError).issues[0]!.path).toEqual(['transport', 'topics', 'audit.logged', 'partitions']);
    await producer.publishMany('order.created', orders(8));
    // Only the four recorded partitions hold events: nothing was written past them.
    const lengths = await Promise.all([0, 1, 2, 3, 4].map((p) => r.raw.xlen(`${prefix}:{order.created:${p}}`)));
    expect(lengths.slice(0, 4).every((n) => n > 0)).toBe(true);
    expect(lengths[4]).toBe(0);
  });

  it('admin.setPartitions raises the count: a running consumer and producer follow, and lowering is refused', async () => {
    const prefix = uniquePrefix('meta-raise');
    const fast = { partitionsCheckMs: 100 };
    const producer = await bus(prefix, undefined, fast);
    const consumer = await bus(prefix, undefined, fast);
    const seen = new Map<number, number>();
    await consumer.subscribe('order.created', { group: 'g', ...fastRead }, (e, ctx) => void seen.set(e.data.seq, ctx.partition));
    await producer.publishMany('order.created', orders(10));
    await waitFor(() => seen.size === 10, 10_000, 'the events of the one partition');

    const { admin, close } = await openRedisStreamsAdmin({ url: r.server.url, prefix });
    r.cleanup.push(close);
    expect(await admin.setPartitions('order.created', 4)).toEqual({ from: 1, partitions: 4 });
    await waitFor(() => producer.transport.partitionsFor('order.created') === 4, 5_000, 'the producer to read the raised count');
    await producer.publishMany('order.created', orders(40, 10));
    await waitFor(() => seen.size === 50, 10_000, 'every event, those on the new partitions included');
    expect(new Set(seen.values())).toEqual(new Set([0, 1, 2, 3]));
    await consumer.idle({ timeoutMs: 10_000 });

    const lower = await admin.setPartitions('order.created', 2).catch((e: unknown) => e);
    expect(lower).toBeInstanceOf(ConfigError);
    expect((lower as Error).message).toMatch(/from 4 to 2/);
    expect(JSON.parse((await r.raw.get(`${prefix}:{order.created:0}:meta`))!)).toEqual({ v: 1, partitions: 4 });
    // A new bus with no count set takes the raised one; the count it was raised from is refused.
    expect((await bus(prefix)).transport.partitionsFor('order.created')).toBe(4);
    await expect(bus(prefix, 1)).rejects.toThrow(/transport\.partitions is 1 for "order\.created", but 4 partitions are recorded/);
  });
});
