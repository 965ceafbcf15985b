/** A misspelt or unknown option is a ConfigError whose issue path names that option, not only its parent. */
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { createEventBus, defineEvents } from '../../src/index.js';
import { configError } from '../helpers/config-error.js';
import { redisStreamsConfigSchema } from '../../transports/redis-streams/config.js';

const events = defineEvents({ 'order.created': z.object({ orderId: z.string() }) });

describe('unknown config keys', () => {
  it('names a misspelt transport option in the path and the message', async () => {
    // @ts-expect-error misspelt (refused at compile time too; JavaScript callers get here)
    const err = await configError(() => createEventBus({ service: 's', events, transport: { type: 'memory', partitons: 4 } }));
    expect(err.issues.map((i) => i.path)).toEqual([['transport', 'partitons']]);
    expect(err.message).toContain('transport.partitons: Unrecognized key; did you mean `partitions`?');
  });

  it('names the option a misspelt key most likely means, at every level, and nothing when none is close', async () => {
    const config = { service: 's', events, transport: { type: 'memory' }, batchng: {}, batching: { maxevents: 1, onFul: 'reject', colour: 1 } };
    const err = await configError(() => createEventBus(config as never));
    const byPath = Object.fromEntries(err.issues.map((i) => [i.path.join('.'), i.message]));
    expect(byPath).toEqual({
      batchng: 'Unrecognized key; did you mean `batching`?',
      'batching.maxevents': 'Unrecognized key; did you mean `maxEvents`?',
      'batching.onFul': 'Unrecognized key; did you mean `onFull`?',
      'batching.colour': 'Unrecognized key',
    });
    const redis = await configError(() => createEventBus({ service: 's', events, transport: { type: 'redis-streams', maxlen: 5, clutser: {} } } as never));
    expect(redis.message).toContain('transport.maxlen: Unrecognized key; did you mean `maxLen`?');
    expect(redis.message).toContain('transport.clutser: Unrecognized key; did you mean `cluster`?');
  });

  it("names the bus's subscribe option a transport's subscribe options do not take", async () => {
    const bus = await createEventBus({ service: 's', events, transport: { type: 'memory' } });
    try {
      const err = await configError(() => bus.subscribe('order.created', { group: 'g', concurency: 4 } as never, () => {}));
      expect(err.message).toContain('concurency: Unrecognized key; did you mean `concurrency`?');
    } finally {
      await bus.close();
    }
  });

  it('names each unknown top-level and nested bus option', async () => {
    const config = { service: 's', events, transport: { type: 'memory' }, batchng: {}, batching: { maxEvent: 1, onfull: 'reject' } };
    const err = await configError(() => createEventBus(config as never));
    expect(err.issues.map((i) => i.path.join('.')).sort()).toEqual(['batching.maxEvent', 'batching.onfull', 'batchng']);
  });

  it('names an unknown subscribe option', async () => {
    const bus = await createEventBus({ service: 's', events, transport: { type: 'memory' } });
    try {
      const err = await configError(() => bus.subscribe('order.created', { group: 'g', retry: { backof: {} } } as never, () => {}));
      expect(err.issues.map((i) => i.path.join('.'))).toEqual(['subscribe options.retry.backof']);
    } finally {
      await bus.close();
    }
  });

  it('refuses options that contradict each other, naming the one refused, instead of ignoring one', async () => {
    const redis = (o: Record<string, unknown>) => configError(() => createEventBus({ service: 's', events, transport: { type: 'redis-streams', ...o } } as never));
    expect((await redis({ cluster: { nodes: ['127.0.0.1:1'] }, url: 'redis://127.0.0.1:1' })).message).toContain('transport.url: not with cluster');
    // A cluster has database 0 only: a seed with a /db is refused, not silently dropped.
    expect((await redis({ cluster: { nodes: ['redis://127.0.0.1:1/3'] } })).issues.map((i) => i.path.join('.'))).toEqual(['transport.cluster.nodes.0']);
    // keyPrefix through the ioredis Cluster options is refused as it is in transport.redisOptions.
    expect((await redis({ cluster: { nodes: ['127.0.0.1:1'], options: { redisOptions: { keyPrefix: 'p:' } } } })).message).toContain('use transport.prefix');
  });

  it('refuses cluster seeds that are not host:port, host, [ipv6]:port or redis:// URLs, naming the seed', async () => {
    const redis = (o: Record<string, unknown>) => configError(() => createEventBus({ service: 's', events, transport: { type: 'redis-streams', ...o } } as never));
    for (const bad of ['http://127.0.0.1:7000', '127.0.0.1:70000', '127.0.0.1:', 'host name:7000', 'a/b:7000']) {
      const err = await redis({ cluster: { nodes: ['127.0.0.1:7000', bad] } });
      expect(
        err.issues.map((i) => i.path.join('.')),
        bad,
      ).toEqual(['transport.cluster.nodes.1']);
      expect(err.message).toContain('must be host:port');
    }
    for (const good of [['127.0.0.1:7000', 'localhost', 'redis-0.redis:6379', '[::1]:7000', 'redis://:pw@127.0.0.1:7000'], ['rediss://h.example:7000/']]) {
      expect(redisStreamsConfigSchema.safeParse({ type: 'redis-streams', cluster: { nodes: good } }).error).toBeUndefined();
    }
    const bus = await createEventBus({ service: 's', events, transport: { type: 'memory' } });
    try {
      const err = await configError(() => bus.subscribe('order.created', { group: 'g', retry: { backoff: { initialMs: 5000, maxMs: 1000 } } }, () => {}));
      expect(err.message).toContain('retry.backoff.maxMs: must be at least initialMs (5000)');
      // initialMs alone above the default maxMs (30 s) raises maxMs to it.
      const sub = await bus.subscribe('order.created', { group: 'g', retry: { backoff: { initialMs: 60_000 } } }, () => {});
      await sub.close();
    } finally {
      await bus.close();
    }
  });
});
