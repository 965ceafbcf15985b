/**
 * Per-test resources of the Redis fault tests: servers started and buses made through it are stopped and
 * closed after each test (last made, first closed), whatever the test did to them. (Not in redis-common.ts:
 * the child-process fixtures import that file outside vitest.) And the keys those tests aim at one partition.
 */
import { afterEach } from 'vitest';
import type { EventBus } from '../../src/index.js';
import { partitionForKey } from '../../src/partition.js';
import { RedisServer } from '../helpers/redis-server.js';
import { makeBus, type events } from './redis-common.js';

export function perTestResources() {
  const cleanup: (() => Promise<unknown> | unknown)[] = [];
  afterEach(async () => {
    for (const f of cleanup.splice(0).reverse()) await Promise.resolve(f()).catch(() => undefined);
  });
  return {
    cleanup,
    async server(opts: { aof?: boolean } = {}): Promise<RedisServer> {
      const s = await RedisServer.start(opts);
      cleanup.push(() => s.stop());
      return s;
    },
    async bus(url: string, extra: Record<string, unknown> = {}, prefix?: string): Promise<EventBus<typeof events>> {
      const b = await makeBus(url, extra, prefix);
      cleanup.push(() => b.close());
      return b;
    },
  };
}

/** A key of `order.created` that lands on `partition` of `n`. */
export function keyFor(partition: number, n: number): string {
  for (let i = 0; ; i++) if (partitionForKey(`k${i}`, n) === partition) return `k${i}`;
}
