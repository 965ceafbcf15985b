/**
 * Redis Cluster: the transport given seed nodes instead of a url. Each partition is its own stream, named with a
 * hash tag (`<prefix>:{<type>:<partition>}`), so a partition's stream, retry stream, dead letters and metadata
 * share one slot while the partitions spread over the masters: publishing and consuming scale with them.
 *
 * Run: REDIS_CLUSTER_NODES=127.0.0.1:7000,127.0.0.1:7001,127.0.0.1:7002 npm run example:redis-cluster
 * (the seeds: one reachable node is enough, the client discovers the rest; `rediss://user:pass@host:port`
 * seeds give TLS and credentials to every node). Keys stay under a fresh prefix per run.
 */
import { Cluster } from 'ioredis';
import { z } from 'zod';
import { createEventBus, defineEvents } from '../src/index.js';
import type { RedisStreamsTransport } from '../transports/redis-streams/index.js';

const events = defineEvents({
  'order.created': z.object({ orderId: z.string(), customer: z.string() }),
});

const nodes = (process.env.REDIS_CLUSTER_NODES ?? '127.0.0.1:7000,127.0.0.1:7001,127.0.0.1:7002').split(',');
const prefix = `example-cluster-${Date.now().toString(36)}`;
const bus = await createEventBus({
  service: 'orders',
  events,
  transport: { type: 'redis-streams', cluster: { nodes }, prefix, partitions: 6 },
});

// Per-key order holds across the cluster: a customer's orders go to one partition, so one stream on one master.
const lastSeen = new Map<string, number>();
let outOfOrder = 0;
let handled = 0;
await bus.subscribe('order.created', { group: 'fulfilment', concurrency: 1 }, (event) => {
  const [customer, n] = [event.data.customer, Number(event.data.orderId.split('-')[1])];
  if ((lastSeen.get(customer) ?? -1) > n) outOfOrder++;
  lastSeen.set(customer, n);
  handled++;
});

const orders = Array.from({ length: 600 }, (_, i) => ({ orderId: `o-${i}`, customer: `c-${i % 20}` }));
await bus.publishMany('order.created', orders, { key: (o) => o.customer });
await bus.idle({ timeoutMs: 20_000 });
console.log(`handled ${handled} orders, ${outOfOrder} out of order per customer`);

// Where the partitions live: each stream's slot, and the master serving it.
const admin = await (bus.transport as RedisStreamsTransport).admin();
const client = new Cluster(nodes.map((n) => ({ host: n.split(':')[0]!, port: Number(n.split(':')[1] ?? 6379) })));
const masters = new Set<string>();
for (const s of await admin.listStreams()) {
  const slot = Number(await client.call('CLUSTER', 'KEYSLOT', s.key));
  const master = client.slots[slot]?.[0] ?? '?';
  masters.add(master);
  console.log(`${s.key}: ${s.length} entries, slot ${slot} on ${master}`);
}
console.log(`${masters.size} master(s) hold the partitions`);
client.disconnect();
await bus.close();
