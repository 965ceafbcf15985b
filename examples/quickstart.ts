/**
 * Quickstart: declare events, publish, consume in a group, see a bad payload rejected.
 *
 * Run: npm run example:quickstart                      (in memory, nothing to install)
 *      EVENTLANE_TRANSPORT=redis-streams npm run example:quickstart
 *      (Redis at REDIS_URL, default redis://localhost:6379; each run uses keys under a fresh prefix,
 *      `redis-cli --scan --pattern 'example-quickstart-*'` lists them)
 */
import { z } from 'zod';
import { createEventBus, defineEvents, ValidationError } from '../src/index.js';

// 1. The events: a name and a zod schema each. Publishing and handlers are typed from these.
const events = defineEvents({
  'order.created': z.object({ orderId: z.string(), amount: z.number().positive() }),
  'order.shipped': z.object({ orderId: z.string(), carrier: z.string() }),
});

// 2. The transport is configuration: the rest of this file is the same for memory and Redis.
const transport =
  process.env.EVENTLANE_TRANSPORT === 'redis-streams'
    ? { type: 'redis-streams', url: process.env.REDIS_URL ?? 'redis://localhost:6379', prefix: `example-quickstart-${Date.now().toString(36)}`, partitions: 4 }
    : { type: 'memory', partitions: 4 };

const bus = await createEventBus({ service: 'checkout', events, transport });

// 3. A consumer group: every event reaches one of the group's consumers; 16 handlers run at once.
let received = 0;
const sub = await bus.subscribe('order.created', { group: 'billing', concurrency: 16 }, async (event) => {
  // event.data is typed: { orderId: string; amount: number }
  received++;
  if (received <= 3) console.log(`billing got ${event.data.orderId} (${event.data.amount}) id=${event.id}`);
});

// 4. Publish one event, then a thousand in one call; events with the same key keep their order.
await bus.publish('order.created', { orderId: 'o-1', amount: 10 }, { key: 'customer-7' });
await bus.publishMany(
  'order.created',
  Array.from({ length: 999 }, (_, i) => ({ orderId: `o-${i + 2}`, amount: i + 1 })),
  { key: (o) => o.orderId },
);

// 5. A payload that does not match its schema is refused before it is sent.
try {
  // @ts-expect-error amount must be a number: a compile error, and a runtime ValidationError
  await bus.publish('order.created', { orderId: 'o-bad', amount: 'ten' });
} catch (err) {
  if (err instanceof ValidationError) console.log(`rejected before sending: ${err.message}`);
}

// 6. Wait until the group has handled everything published, then close (close() alone does not wait for
// events still queued in memory).
await bus.idle({ timeoutMs: 10_000 });
await sub.close();
await bus.close();
console.log(`billing handled ${received} events; bus closed cleanly`);
