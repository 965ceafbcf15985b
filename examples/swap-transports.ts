/**
 * Swapping transports by configuration: the same service code (events, handlers, publishing) runs on each
 * built-in transport, and only the `transport` block of the bus config changes.
 *
 * Run: npm run example:swap-transports    (Redis at REDIS_URL, default redis://localhost:6379)
 * TRANSPORTS picks which to run, comma-separated (default memory,native,redis-streams).
 */
import { z } from 'zod';
import { createEventBus, defineEvents } from '../src/index.js';

const events = defineEvents({
  'payment.captured': z.object({ paymentId: z.string(), cents: z.number().int().positive() }),
});

/** The only thing that differs between deployments: one config block per transport. */
const configs = {
  // In-process, for tests and single-process tools.
  memory: { type: 'memory', partitions: 4 },
  // In-process on the C++ lock-free core (a JS fallback where the addon is not built), for hot paths.
  native: { type: 'native', partitions: 4 },
  // Across processes and hosts, durable: Redis Streams with consumer groups (a fresh key prefix per run).
  'redis-streams': { type: 'redis-streams', url: process.env.REDIS_URL ?? 'redis://localhost:6379', prefix: `example-swap-${Date.now().toString(36)}`, partitions: 4 },
} as const;

/** The service: identical for every transport. Returns the total it consumed. */
async function runService(transport: (typeof configs)[keyof typeof configs]): Promise<number> {
  const bus = await createEventBus({ service: 'ledger', events, transport });
  let total = 0;
  await bus.subscribe('payment.captured', { group: 'ledger' }, (event) => {
    total += event.data.cents;
  });
  const payments = Array.from({ length: 500 }, (_, i) => ({ paymentId: `p-${i}`, cents: i + 1 }));
  await bus.publishMany('payment.captured', payments, { key: (p) => p.paymentId });
  await bus.idle({ timeoutMs: 10_000 }); // every event published has been handled
  await bus.close();
  return total;
}

const chosen = (process.env.TRANSPORTS ?? 'memory,native,redis-streams').split(',') as (keyof typeof configs)[];
for (const name of chosen) {
  if (!(name in configs)) throw new Error(`unknown transport "${name}": one of ${Object.keys(configs).join(', ')}`);
  console.log(`${name}: consumed ${await runService(configs[name])} cents`);
}
