/**
 * Each iteration's Redis keys are deleted when it ends (outside its timed window), so a long run's streams
 * do not add up in Redis: before this, a 4 KB publishing-throughput run held every iteration's 100,000 events
 * until the run ended and grew redis-server to 23 GB. `--keep-keys` leaves them for inspection.
 */
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { RedisServer, uniquePrefix } from '../helpers/redis-server.js';
import { GLOBAL_DEFAULTS } from '../../benchmarking/lib/config.js';
import { runIterationsHere } from '../../benchmarking/lib/iterate.js';
import type { Scenario } from '../../benchmarking/lib/types.js';

let server: RedisServer;
let redis: Redis;
beforeAll(async () => {
  server = await RedisServer.start();
  redis = new Redis(server.url);
});
afterAll(async () => {
  redis?.disconnect();
  await server?.stop();
});

/** A scenario whose runner counts the keys of the variant's earlier iterations, then writes one of its own. */
function keyCountingScenario(seen: number[]): Scenario {
  return {
    name: 'keys',
    title: 'keys',
    seed: 'none',
    description: '',
    transports: ['redis'],
    takes: [],
    defaults: {},
    variants: () => [],
    runners: {
      write: async (ctx) => {
        const base = ctx.variant.config.keyPrefix.replace(/\d+:$/, '');
        seen.push((await redis.keys(`${base}*`)).length);
        await ctx.timed(() => redis.xadd(`${ctx.config.keyPrefix}stream`, '*', 'd', 'x'.repeat(1000)));
        return { events: 1, sent: 1, received: null };
      },
    },
  };
}

async function run(keepKeys: boolean): Promise<{ seen: number[]; left: number; prefix: string }> {
  const seen: number[] = [];
  const prefix = uniquePrefix('iter-keys');
  const config = { ...GLOBAL_DEFAULTS, transport: 'redis' as const, redisUrl: server.url, keyPrefix: prefix };
  const variant = { id: 'v', label: 'v', kind: 'eventlane' as const, runner: 'write', config, params: {} };
  await runIterationsHere(keyCountingScenario(seen), { scenario: 'keys', variant, warmups: 1, measured: 2, keepKeys });
  return { seen, left: (await redis.keys(`${prefix}*`)).length, prefix };
}

describe('benchmark iterations on Redis', () => {
  it('delete their keys when each one ends', async () => {
    const { seen, left } = await run(false);
    expect(seen).toEqual([0, 0, 0]);
    expect(left).toBe(0);
  });

  it('keep them with --keep-keys', async () => {
    const { seen, left } = await run(true);
    expect(seen).toEqual([0, 1, 2]);
    expect(left).toBe(3);
  });
});
