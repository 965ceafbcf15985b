/**
 * Changing a type's partition count under a group (raised with admin.setPartitions): a group raised to more
 * partitions reads the new partition streams from their start (events producers with the new count wrote before
 * it came are not skipped by startFrom '$'), and a consumer is warned of a partition stream past its count
 * (written by a client that ignores the recorded count).
 */
import { describe, expect, it } from 'vitest';
import { createEventBus, type EventBus, type Logger } from '../../src/index.js';
import { openRedisStreamsAdmin } from '../../transports/redis-streams/index.js';
import { uniquePrefix } from '../helpers/redis-server.js';
import { waitFor } from '../helpers/wait.js';
import { events, fastRead, orders, recordingLogger, redisForFile } from './redis-common.js';

const r = redisForFile();

async function bus(prefix: string, partitions: number | undefined, logger?: Logger): Promise<EventBus<typeof events>> {
  const transport = { type: 'redis-streams' as const, url: r.server.url, prefix, ...(partitions === undefined ? {} : { partitions }) };
  const b = await createEventBus({ service: 'parts', events, ...(logger ? { logger } : {}), transport });
  r.cleanup.push(() => b.close());
  return b;
}

async function raise(prefix: string, partitions: number): Promise<void> {
  const { admin, close } = await openRedisStreamsAdmin({ url: r.server.url, prefix });
  await admin.setPartitions('order.created', partitions).finally(close);
}

describe('redis-streams: changing partitions', () => {
  it('a group raised from 2 to 4 partitions gets the events a 4-partition producer wrote to partitions 2 and 3 before it came', async () => {
    const prefix = uniquePrefix('raise');
    const seen = new Set<number>();
    const before = await bus(prefix, 2);
    const sub = await before.subscribe('order.created', { group: 'billing', ...fastRead }, (e) => void seen.add(e.data.seq));
    await before.publishMany('order.created', orders(20));
    await waitFor(() => seen.size === 20, 10_000, 'the events of partitions 0 and 1');
    await sub.close();

    await raise(prefix, 4);
    const producer = await bus(prefix, undefined);
    await producer.publishMany('order.created', orders(20, 20)); // round-robin over 4: 10 land on partitions 2 and 3
    const logger = recordingLogger();
    const after = await bus(prefix, undefined, logger); // the consumer redeployed (the recorded count), startFrom '$'
    await after.subscribe('order.created', { group: 'billing', ...fastRead }, (e) => void seen.add(e.data.seq));
    await producer.publishMany('order.created', orders(8, 40));
    await waitFor(() => seen.size === 48, 10_000, 'every event, including those written to partitions 2 and 3 before the group had them');
    expect([...seen].sort((a, b) => a - b)).toEqual([...Array(48).keys()]);
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

  it('a consumer is warned of a partition stream past its count, written by a client that ignores the recorded count', async () => {
    const prefix = uniquePrefix('fewer');
    await r.raw.xadd(`${prefix}:{order.created:2}`, '*', 'v', '1');
    const logger = recordingLogger();
    const consumer = await bus(prefix, 2, logger);
    await consumer.subscribe('order.created', { group: 'g', ...fastRead }, () => {});
    await waitFor(() => logger.lines.some((l) => l.level === 'warn' && l.msg.includes('reads partitions 0..1 only')), 5_000, 'the warning');
    expect(logger.lines.find((l) => l.msg.includes('reads partitions 0..1 only'))?.obj).toMatchObject({ partitions: 2, stream: `${prefix}:{order.created:2}` });

    await raise(prefix, 3);
    const quiet = recordingLogger();
    const same = await bus(prefix, undefined, quiet);
    await same.subscribe('order.created', { group: 'g3', ...fastRead }, () => {});
    await new Promise((res) => setTimeout(res, 300));
    expect(quiet.lines.filter((l) => l.level === 'warn')).toEqual([]);
  });
});
