/**
 * The suite's test of partition counts agreed through the transport: the first bus to use a type records its
 * count with the transport (the broker, the Redis streams), a bus with no count set uses it, and a bus set to
 * another count is refused.
 */
import { ConfigError } from '../errors.js';
import type { ConformanceCase } from './kit.js';
import { waitFor } from './wait.js';

export const partitionCases: ConformanceCase[] = [
  {
    name: 'a consumer with no partitions set gets every event of a producer set to 4; another count is refused naming both',
    async run({ bus, target, subscribe, subOpts, orders, timeout, expect }) {
      const { partitions: _omitted, ...block } = await target.transport();
      const producer = await bus({ ...block, partitions: 4 });
      const consumer = await bus(block);
      expect(consumer.transport.partitionsFor('order.created')).toBe(4);
      const seen = new Set<number>();
      await subscribe(consumer, 'order.created', subOpts({ group: 'g', concurrency: 8 }), (e) => void seen.add(e.data.seq));
      await producer.publishMany('order.created', orders(100));
      await Promise.all(orders(100, 100).map((o) => producer.publish('order.created', o, { key: o.orderId })));
      await waitFor(() => seen.size === 200, timeout, 'all 200 events');
      await consumer.idle({ timeoutMs: timeout });
      expect(seen.size).toBe(200);

      const refused = await bus({ ...block, partitions: 2 }).catch((e: unknown) => e);
      expect(refused).toBeInstanceOf(ConfigError);
      expect((refused as Error).message).toMatch(/partitions is 2 for "[^"]+", but .*\b4 partitions\b/);
    },
  },
];
