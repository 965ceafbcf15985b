/**
 * Attempt numbers of the Redis Streams consumer, against a real redis-server: an entry no handler started
 * before close() (a retry waiting for its due time, one Redis delivered to a read that close() cut off)
 * reaches the next consumer as the attempt it was waiting for, not as one more that failed; a retry's due time
 * written by a clock far ahead is capped.
 */
import { describe, expect, it } from 'vitest';
import { createEventBus, type EventBus } from '../../src/index.js';
import { uniquePrefix } from '../helpers/redis-server.js';
import { TcpProxy } from '../helpers/tcp-proxy.js';
import { waitFor } from '../helpers/wait.js';
import { retryKey, streamKey, type RedisStreamsTransport } from '../../transports/redis-streams/index.js';
import { events, fastRead, redisForFile } from './redis-common.js';

const r = redisForFile();

async function bus(prefix: string, url = r.server.url): Promise<EventBus<typeof events>> {
  const b = await createEventBus({ service: 'review', events, transport: { type: 'redis-streams', url, prefix, partitions: 1 } });
  r.cleanup.push(() => b.close());
  return b;
}

describe('redis-streams consumer: attempt numbers', () => {
  it('a retry left waiting for its due time by close() keeps its attempt number for the next consumer', async () => {
    const prefix = uniquePrefix('closeretry');
    const a = await bus(prefix);
    const opts = { group: 'g', maxDeliveries: 2, minIdleMs: 300, blockMs: 200, retry: { backoff: { initialMs: 2000, maxMs: 2000 } } };
    const seen: string[] = [];
    const subA = await a.subscribe('order.created', { ...opts, consumer: 'a' }, (e, ctx) => {
      seen.push(`a:${ctx.attempt}`);
      throw new Error('not yet');
    });
    await a.publish('order.created', { orderId: 'o-0', amount: 0, seq: 0 });
    // The failed event is in the retry stream, read by A, held until due.
    const rk = retryKey(prefix, 'order.created', 0, 'g');
    await waitFor(async () => ((await r.raw.xpending(rk, 'g')) as [number])[0] === 1, 5000, 'the retry entry held by a');
    await subA.close();
    expect(seen).toEqual(['a:1']);
    // Another member takes it over: attempt 2 runs (the first retry), instead of it being counted as
    // delivered twice and dead-lettered before it ran.
    const b = await bus(prefix);
    await b.subscribe('order.created', { ...opts, consumer: 'b' }, (e, ctx) => void seen.push(`b:${ctx.attempt}`));
    const t = b.transport as RedisStreamsTransport;
    await waitFor(async () => seen.length === 2 || (await t.deadLetters('order.created', 'g')).length > 0, 10_000, 'the retry to run or be dead-lettered');
    expect(seen).toEqual(['a:1', 'b:2']);
    expect(await t.deadLetters('order.created', 'g')).toEqual([]);
  });

  it('a retry due by a clock far ahead of ours waits no longer than our backoff.maxMs (plus jitter)', async () => {
    const prefix = uniquePrefix('skewdue');
    const b = await bus(prefix);
    const seen: number[] = [];
    await b.subscribe('order.created', { group: 'g', ...fastRead, retry: { backoff: { initialMs: 100, maxMs: 300 } } }, (e, ctx) => void seen.push(ctx.attempt));
    // A retry written by a consumer on a host whose clock runs an hour ahead.
    const fields = ['v', '1', 'kind', 'event', 'id', 'e-skew', 'type', 'order.created', 'source', 'other', 'time', String(Date.now()), 'data', JSON.stringify({ orderId: 'o-0', amount: 0, seq: 0 })];
    await r.raw.xadd(retryKey(prefix, 'order.created', 0, 'g'), '*', ...fields, 'attempt', '2', 'due', String(Date.now() + 3_600_000), 'origin', '1-1', 'error', 'failed');
    // Not held for the hour: the due time is capped at our backoff.maxMs.
    await waitFor(() => seen.length === 1, 5000, 'the retry to run');
    expect(seen).toEqual([2]);
  });

  it('an entry Redis delivered to a read that close() cut off reaches the next consumer as its first attempt', async () => {
    const prefix = uniquePrefix('cutread');
    // Consumer A reads through a proxy that can keep Redis's replies from its read connection.
    const proxy = await TcpProxy.start(r.server.port);
    r.cleanup.push(() => proxy.stop());
    const a = await bus(prefix, proxy.url);
    const opts = { group: 'g', maxDeliveries: 1, minIdleMs: 300, blockMs: 10_000 };
    const seen: string[] = [];
    const subA = await a.subscribe('order.created', { ...opts, consumer: 'a' }, (e, ctx) => void seen.push(`a:${ctx.attempt}`));
    await waitFor(() => /xreadgroup[\s\S]*>/.test(proxy.sentText(/eventlane:read:/)), 5000, 'the blocking read sent');
    proxy.holdReplies(/eventlane:read:/);
    await r.raw.xadd(
      streamKey(prefix, 'order.created', 0),
      '*',
      'v',
      '1',
      'kind',
      'event',
      'id',
      'e-cut',
      'type',
      'order.created',
      'source',
      'other',
      'time',
      String(Date.now()),
      'data',
      JSON.stringify({ orderId: 'o-0', amount: 0, seq: 0 }),
    );
    // Redis delivered it to A's read (pending on A, delivery count 1); A never got the reply.
    await waitFor(() => proxy.heldReplyText.includes('e-cut'), 5000, 'the reply held');
    await subA.close();
    expect(seen).toEqual([]);
    const b = await bus(prefix);
    await b.subscribe('order.created', { ...opts, consumer: 'b' }, (e, ctx) => void seen.push(`b:${ctx.attempt}`));
    const t = b.transport as RedisStreamsTransport;
    await waitFor(async () => seen.length === 1 || (await t.deadLetters('order.created', 'g')).length > 0, 10_000, 'the entry to run or be dead-lettered');
    // Its first attempt: maxDeliveries 1 does not dead-letter an event no handler ever saw.
    expect(seen).toEqual(['b:1']);
    expect(await t.deadLetters('order.created', 'g')).toEqual([]);
  });
});
