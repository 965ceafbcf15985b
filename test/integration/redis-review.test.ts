/**
 * Review findings of the Redis Streams consumer, each against a real redis-server: close() during read
 * errors, read-ahead entries stolen by reclaim.
 */
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { Redis } from 'ioredis';
import { createEventBus, type EventBus, type Logger } from '../../src/index.js';
import { RedisServer, uniquePrefix } from '../helpers/redis-server.js';
import { waitFor } from '../helpers/wait.js';
import { streamKey } from '../../transports/redis-streams/index.js';
import { events, fastRead } from './redis-common.js';

type Bus = EventBus<typeof events>;

let server: RedisServer;
let raw: Redis;
const cleanup: (() => Promise<unknown> | unknown)[] = [];

beforeAll(async () => {
  server = await RedisServer.start();
  raw = new Redis(server.url);
});
afterEach(async () => {
  for (const f of cleanup.splice(0).reverse()) await Promise.resolve(f()).catch(() => undefined);
});
afterAll(async () => {
  raw.disconnect();
  await server.stop();
});

/** A logger that keeps the messages it was given. */
function recordingLogger(): Logger & { messages: string[] } {
  const messages: string[] = [];
  const keep = (_: object, msg?: string): void => void messages.push(msg ?? '');
  return { messages, debug: keep, info: keep, warn: keep, error: keep };
}

async function bus(prefix: string, transport: Record<string, unknown> = {}, logger?: Logger): Promise<Bus> {
  const b = await createEventBus({ service: 'review', events, ...(logger ? { logger } : {}), transport: { type: 'redis-streams', url: server.url, prefix, partitions: 1, ...transport } });
  cleanup.push(() => b.close());
  return b;
}

/** Resolves to 'timeout' if `p` has not settled after `ms`. */
function within(p: Promise<unknown>, ms: number): Promise<unknown> {
  let timer: NodeJS.Timeout | undefined;
  return Promise.race([p.then(() => 'done'), new Promise((resolve) => (timer = setTimeout(() => resolve('timeout'), ms)))]).finally(() => clearTimeout(timer));
}

describe('redis-streams review: close()', () => {
  it('close() returns while the read loop is backing off after read errors', async () => {
    const prefix = uniquePrefix('closeback');
    const logger = recordingLogger();
    const b = await bus(prefix, {}, logger);
    const sub = await b.subscribe('order.created', { group: 'g', ...fastRead }, () => undefined);
    // Another writer clobbers the stream with a string: every read fails (WRONGTYPE) and the loop backs off.
    const key = streamKey(prefix, 'order.created', 0);
    await raw.del(key);
    await raw.set(key, 'not a stream');
    await waitFor(() => logger.messages.filter((m) => m.includes('read failed')).length >= 4, 10_000, 'failing reads');
    expect(await within(sub.close(), 5000)).toBe('done');
    await raw.del(key);
  });
});
