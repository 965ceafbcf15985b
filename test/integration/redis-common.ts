/** Shared bits of the Redis integration tests. */
import { z } from 'zod';
import { createEventBus, defineEvents } from '../../src/index.js';
import { uniquePrefix } from '../helpers/redis-server.js';

export const events = defineEvents({
  'order.created': z.object({ orderId: z.string(), amount: z.number(), seq: z.number().int() }),
  'audit.logged': z.object({ line: z.string() }),
});

export const fastRetry = { retry: { backoff: { initialMs: 10, maxMs: 50, multiplier: 2, jitter: 0 } } };
export const fastRead = { blockMs: 200, minIdleMs: 1000 };

export function orders(n: number, from = 0): { orderId: string; amount: number; seq: number }[] {
  return Array.from({ length: n }, (_, i) => ({ orderId: `o-${from + i}`, amount: from + i, seq: from + i }));
}

export async function makeBus(url: string, extra: Record<string, unknown> = {}, prefix = uniquePrefix('it')) {
  return createEventBus({ service: 'it', events, transport: { type: 'redis-streams', url, prefix, partitions: 2, ...extra } });
}
