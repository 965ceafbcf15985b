/**
 * Changing a type's partition count under a running group: a group raised to more partitions reads the new
 * partition streams from their start (events producers with the new count wrote before it came are not
 * skipped by startFrom '$'), and a consumer reading fewer partitions than a producer writes is warned.
 */
import { describe, expect, it } from 'vitest';
import { createEventBus, type EventBus, type Logger } from '../../src/index.js';
import { uniquePrefix } from '../helpers/redis-server.js';
import { waitFor } from '../helpers/wait.js';
import { events, fastRead, orders, recordingLogger, redisForFile } from './redis-common.js';

const r = redisForFile();

async function bus(prefix: string, partitions: number, logger?: Logger): Promise<EventBus<typeof events>> {
  const b = await createEventBus({ service: 'parts', events, ...(logger ? { logger } : {}), transport: { type: 'redis-streams', url: r.server.url, prefix, partitions } });
  r.cleanup.push(() => b.close());
  return b;
}

describe('redis-streams: changing partitions', () => {
  it('a group raised from 2 to 4 partitions gets the events a 4-partition producer wrote to partitions 2 and 3 before it came', async () => {
    const prefix = uniquePrefix('raise');
    const seen = new Set<number>();
    const before = await bus(prefix, 2);
    const sub = await before.subscribe('order.created', { group: 'billing', ...fastRead }, (e) => void seen.add(e.data.seq));
    const producer = await bus(prefix, 4);
    await producer.publishMany('order.created', orders(40)); // round-robin: 20 land on partitions 2 and 3
    await waitFor(() => seen.size === 20, 10_000, 'the events of partitions 0 and 1');
    await sub.close();

    const logger = recordingLogger();
    const after = await bus(prefix, 4, logger); // the consumer redeployed with the new count, startFrom '$'
    await after.subscribe('order.created', { group: 'billing', ...fastRead }, (e) => void seen.add(e.data.seq));
    await producer.publishMany('order.created', orders(8, 40));
    await waitFor(() => seen.size === 48, 10_000, 'every event, including those written to partitions 2 and 3 before the group had them');
    const info = logger.lines.find((l) => l.level === 'info' && l.msg.includes('new partitions'));
    expect(info?.obj).toMatchObject({ group: 'billing', partitions: [2, 3] });
  });

  it("a new group still starts at '$' on every partition", async () => {
    const prefix = uniquePrefix('new-group');
    const producer = await bus(prefix, 3);
    await producer.publishMany('order.created', orders(9));
    const seen: number[] = [];
    const consumer = await bus(prefix, 3);
    await consumer.subscribe('order.created', { group: 'fresh', ...fastRead }, (e) => void seen.push(e.data.seq));
    await producer.publishMany('order.created', orders(3, 100));
    await waitFor(() => seen.length === 3, 10_000, 'the events published after subscribing');
    await new Promise((res) => setTimeout(res, 300));
    expect(seen.sort((a, b) => a - b)).toEqual([100, 101, 102]);
  });

  it('a consumer reading fewer partitions than a producer writes is warned, naming the stream it does not read', async () => {
    const prefix = uniquePrefix('fewer');
    const producer = await bus(prefix, 3);
    await producer.publishMany('order.created', orders(3));
    const logger = recordingLogger();
    const consumer = await bus(prefix, 2, logger);
    await consumer.subscribe('order.created', { group: 'g', ...fastRead }, () => {});
    await waitFor(() => logger.lines.some((l) => l.level === 'warn' && l.msg.includes('reads partitions 0..1 only')), 5_000, 'the warning');
    expect(logger.lines.find((l) => l.msg.includes('reads partitions 0..1 only'))?.obj).toMatchObject({ partitions: 2, stream: `${prefix}:{order.created:2}` });

    const quiet = recordingLogger();
    const same = await bus(prefix, 3, quiet);
    await same.subscribe('order.created', { group: 'g3', ...fastRead }, () => {});
    await new Promise((res) => setTimeout(res, 300));
    expect(quiet.lines.filter((l) => l.level === 'warn')).toEqual([]);
  });
});
