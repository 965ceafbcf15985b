/**
 * The largest event is the same default on every transport that stores events, so a change of transport in
 * config does not change what publish takes: an event just under it goes through memory, native (both cores)
 * and a real redis-server, one just over it is a PayloadTooLargeError on each.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { createEventBus, defineEvents, PayloadTooLargeError, type EventBus } from '../../src/index.js';
import { DEFAULT_MAX_EVENT_BYTES } from '../../src/config.js';
import { RedisServer, uniquePrefix } from '../helpers/redis-server.js';

const events = defineEvents({ blob: z.object({ pad: z.string() }) });
/** `{"pad":"..."}` of exactly `bytes` bytes. */
const payload = (bytes: number) => ({ pad: 'x'.repeat(bytes - '{"pad":""}'.length) });

let redis: RedisServer;
beforeAll(async () => {
  redis = await RedisServer.start();
}, 30_000);
afterAll(() => redis?.stop());

const transports: Record<string, () => Record<string, unknown>> = {
  memory: () => ({ type: 'memory' }),
  'native (addon or fallback)': () => ({ type: 'native' }),
  'native (js)': () => ({ type: 'native', implementation: 'js' }),
  'redis-streams': () => ({ type: 'redis-streams', url: redis.url, prefix: uniquePrefix('size') }),
};

describe('the default largest event', () => {
  it.each(Object.keys(transports))('is %s: 1 MiB, as on every transport', async (name) => {
    const bus: EventBus<typeof events> = await createEventBus({ service: 's', events, transport: transports[name]!() as never });
    try {
      expect(bus.transport.capabilities.maxEventBytes).toBe(DEFAULT_MAX_EVENT_BYTES);
      expect(DEFAULT_MAX_EVENT_BYTES).toBe(1024 * 1024);
      const seen: number[] = [];
      await bus.subscribe('blob', { group: 'g', startFrom: '0' }, (e) => void seen.push(e.data.pad.length));
      await bus.publish('blob', payload(DEFAULT_MAX_EVENT_BYTES));
      await expect(bus.publish('blob', payload(DEFAULT_MAX_EVENT_BYTES + 1))).rejects.toBeInstanceOf(PayloadTooLargeError);
      await bus.idle({ timeoutMs: 10_000 });
      expect(seen).toEqual([DEFAULT_MAX_EVENT_BYTES - '{"pad":""}'.length]);
    } finally {
      await bus.close();
    }
  });
}, 60_000);
