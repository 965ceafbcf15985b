/**
 * Consumer groups on Redis Streams: publish orders, consume them in two groups (billing, shipping),
 * let one poison order fail until it is dead-lettered, then inspect and purge the DLQ.
 *
 * Run: npm run example:consumer-group    (Redis at REDIS_URL, default redis://localhost:6379)
 * (or a throwaway server: `redis-server --port 6390 --save ''`, then REDIS_URL=redis://127.0.0.1:6390)
 * Its keys stay under a fresh prefix: `redis-cli --scan --pattern 'example-*'` lists them.
 */
import { z } from 'zod';
import { createEventBus, defineEvents } from '../src/index.js';
import type { RedisStreamsTransport } from '../transports/redis-streams/index.js';

const events = defineEvents({
  'order.created': z.object({ orderId: z.string(), amount: z.number() }),
});

const url = process.env.REDIS_URL ?? 'redis://localhost:6379';
// A fresh prefix per run, so the example never touches other data.
const prefix = `example-${Date.now().toString(36)}`;

const bus = await createEventBus({
  service: 'checkout',
  events,
  transport: { type: 'redis-streams', url, prefix, partitions: 4 },
});

const billed = new Set<string>();
const shipped = new Set<string>();

// Group 1: billing, 8 handlers at once, fails order o-13 every time. A handler that throws has its event
// retried after a backoff (50 ms, doubling up to 200 ms; other events go on meanwhile); after maxDeliveries
// attempts the event goes to the group's dead-letter stream with the last error (each failure is logged at warn).
await bus.subscribe('order.created', { group: 'billing', concurrency: 8, maxDeliveries: 3, retry: { backoff: { initialMs: 50, maxMs: 200 } }, blockMs: 500 }, async (event, ctx) => {
  if (event.data.orderId === 'o-13') throw new Error(`card declined (attempt ${ctx.attempt})`);
  billed.add(event.data.orderId);
});

// Group 2: shipping gets every order too, independently of billing.
await bus.subscribe('order.created', { group: 'shipping', blockMs: 500 }, (event) => {
  shipped.add(event.data.orderId);
});

const orders = Array.from({ length: 100 }, (_, i) => ({ orderId: `o-${i}`, amount: 10 + i }));
await bus.publishMany('order.created', orders, { key: (o) => o.orderId });
console.log(`published ${orders.length} orders to ${prefix}:{order.created:0..3}`);

const transport = bus.transport as RedisStreamsTransport;
const admin = await transport.admin();
const deadline = Date.now() + 15_000;
while ((billed.size < 99 || shipped.size < 100 || (await admin.deadLetters('order.created', 'billing')).length < 1) && Date.now() < deadline) {
  await new Promise((r) => setTimeout(r, 50));
}
console.log(`billing handled ${billed.size}, shipping handled ${shipped.size}`);

for (const g of await admin.groups('order.created')) {
  console.log(`group ${g.group}: pending ${g.pending}, lag ${g.lag ?? 'n/a'}, retrying ${g.retrying}`);
}
const dead = await admin.deadLetters('order.created', 'billing');
for (const d of dead) console.log(`DLQ: ${d.event?.data ? JSON.stringify(d.event.data) : '(raw)'} after ${d.attempts} attempts: ${d.error}`);
console.log(`purged ${await admin.purgeDeadLetters('order.created', { group: 'billing' })} dead letter(s)`);

await bus.close();
