/**
 * Quickstart: declare events, publish, consume in a group, see a bad payload rejected.
 * Run: npm run example:quickstart   (set EVENTLANE_TRANSPORT=redis-streams and REDIS_URL to use Redis)
 */
import { z } from 'zod';
import { createEventBus, defineEvents, ValidationError } from '../src/index.js';

const events = defineEvents({
  'order.created': z.object({ orderId: z.string(), amount: z.number().positive() }),
  'order.shipped': z.object({ orderId: z.string(), carrier: z.string() }),
});

const transport =
  process.env.EVENTLANE_TRANSPORT === 'redis-streams' ? { type: 'redis-streams', url: process.env.REDIS_URL ?? 'redis://127.0.0.1:6379', partitions: 4 } : { type: 'memory', partitions: 4 };

const bus = await createEventBus({ service: 'checkout', events, transport });

let received = 0;
const sub = await bus.subscribe('order.created', { group: 'billing', concurrency: 16 }, async (event) => {
  // event.data is typed: { orderId: string; amount: number }
  received++;
  if (received <= 3) console.log(`billing got ${event.data.orderId} (${event.data.amount}) id=${event.id}`);
});

await bus.publish('order.created', { orderId: 'o-1', amount: 10 }, { key: 'customer-7' });
await bus.publishMany(
  'order.created',
  Array.from({ length: 999 }, (_, i) => ({ orderId: `o-${i + 2}`, amount: i + 1 })),
  { key: (o) => o.orderId },
);

try {
  // @ts-expect-error amount must be a number: a compile error, and a runtime ValidationError
  await bus.publish('order.created', { orderId: 'o-bad', amount: 'ten' });
} catch (err) {
  if (err instanceof ValidationError) console.log(`rejected before sending: ${err.message}`);
}

// Every group of this bus has handled everything published (close() alone would drop what is still queued in memory).
await bus.idle({ timeoutMs: 10_000 });
await sub.close();
await bus.close();
console.log(`billing handled ${received} events; bus closed cleanly`);
