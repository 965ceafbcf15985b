/**
 * A removed option (one a schema lists with its replacement, `withRemovedOptions`) is a ConfigError naming it
 * and what replaces it, as an unknown key is refused, never ignored: the error says what to change.
 */
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { ConfigError, createEventBus, defineEvents } from '../../src/index.js';
import { configError } from '../helpers/config-error.js';
import { arenaBytesFor, popBatchFor } from '../../transports/native/config.js';
import { resolveSubscribeOptions } from '../../transports/redis-streams/config.js';

const events = defineEvents({ 'order.created': z.object({ orderId: z.string() }) });

describe('removed bus options', () => {
  it('batching.maxInFlight names the transport capability that replaces it', async () => {
    const err = await configError(() => createEventBus({ service: 's', events, transport: { type: 'memory' }, batching: { maxInFlight: 4 } } as never));
    expect(err.issues.map((i) => i.path.join('.'))).toEqual(['batching.maxInFlight']);
    expect(err.message).toContain("batching.maxInFlight: removed option: writes in flight are the transport's");
  });

  it('a removed option is named once, next to the other problems of the config', async () => {
    const config = { service: 's', events, transport: { type: 'memory' }, batching: { maxInFlight: 4, maxEvent: 1 } };
    const err = await configError(() => createEventBus(config as never));
    expect(err.issues.map((i) => i.path.join('.')).sort()).toEqual(['batching.maxEvent', 'batching.maxInFlight']);
    expect(err.issues.find((i) => i.path.join('.') === 'batching.maxEvent')!.message).toBe('Unrecognized key; did you mean `maxEvents`?');
  });

  it('is refused whatever its value, undefined too, as an unknown key is', async () => {
    const err = await configError(() => createEventBus({ service: 's', events, transport: { type: 'memory' }, batching: { maxInFlight: undefined } } as never));
    expect(err.issues.map((i) => i.path.join('.'))).toEqual(['batching.maxInFlight']);
  });
});

describe('removed subscribe options', () => {
  it('drainTimeoutMs, retry.backoff.multiplier and retry.backoff.jitter name what replaces them', async () => {
    const bus = await createEventBus({ service: 's', events, transport: { type: 'memory' } });
    try {
      const options = { group: 'g', drainTimeoutMs: 50, retry: { backoff: { initialMs: 10, multiplier: 1, jitter: 0 } } };
      const err = await configError(() => bus.subscribe('order.created', options as never, () => {}));
      expect(err.issues.map((i) => i.path.join('.')).sort()).toEqual(['subscribe options.drainTimeoutMs', 'subscribe options.retry.backoff.jitter', 'subscribe options.retry.backoff.multiplier']);
      expect(err.message).toContain("subscribe options.drainTimeoutMs: removed option: a subscription's close() waits up to the bus's drainTimeoutMs");
      expect(err.message).toContain('retry.backoff.multiplier: removed option: each retry waits 2x the one before');
      expect(err.message).toContain('retry.backoff.jitter: removed option: delays are spread by up to 20% either way');
    } finally {
      await bus.close();
    }
  });
});

describe('removed Redis subscribe options', () => {
  it('readCount, claimCount, reclaimIntervalMs and watchdogMs name what they derive from', () => {
    const err = (() => {
      try {
        resolveSubscribeOptions({ readCount: 5, claimCount: 5, reclaimIntervalMs: 50, watchdogMs: 200 }, 1, { commandTimeoutMs: 10_000 });
      } catch (e) {
        return e;
      }
    })() as ConfigError;
    expect(err).toBeInstanceOf(ConfigError);
    expect(err.issues.map((i) => i.path.join('.')).sort()).toEqual([
      'subscribe options.claimCount',
      'subscribe options.readCount',
      'subscribe options.reclaimIntervalMs',
      'subscribe options.watchdogMs',
    ]);
    expect(err.message).toContain('readCount: removed option: a read asks for at most max(1000, concurrency) entries, and no more than prefetch');
    expect(err.message).toContain('reclaimIntervalMs: removed option: the reclaim pass runs every minIdleMs / 2');
    expect(err.message).toContain('watchdogMs: removed option: a read is abandoned once its reply is commandTimeoutMs / 2 late past blockMs');
  });

  it('derives read and claim sizes from concurrency and prefetch, periods from minIdleMs and commandTimeoutMs', () => {
    const defaults = resolveSubscribeOptions({}, 1, { commandTimeoutMs: 10_000 });
    expect(defaults).toMatchObject({ prefetch: 8000, readCount: 1000, claimCount: 100, minIdleMs: 30_000, reclaimIntervalMs: 15_000, watchdogMs: 5000 });
    expect(resolveSubscribeOptions({}, 5000, { commandTimeoutMs: 10_000 })).toMatchObject({ prefetch: 8000, readCount: 5000, claimCount: 500 });
    expect(resolveSubscribeOptions({ prefetch: 5, minIdleMs: 300 }, 1, { commandTimeoutMs: 400 })).toMatchObject({ readCount: 5, claimCount: 1, reclaimIntervalMs: 150, watchdogMs: 200 });
  });
});

describe('removed Redis transport options', () => {
  it('host, port, db and tls name url (and redisOptions.tls); dlqMaxLen names maxDeadLetters', async () => {
    const transport = { type: 'redis-streams', host: 'h', port: 6380, db: 2, tls: true, dlqMaxLen: 10 };
    const err = await configError(() => createEventBus({ service: 's', events, transport } as never));
    expect(err.issues.map((i) => i.path.join('.')).sort()).toEqual(['transport.db', 'transport.dlqMaxLen', 'transport.host', 'transport.port', 'transport.tls']);
    expect(err.message).toContain('transport.host: removed option: give url: redis://host:port');
    expect(err.message).toContain('transport.db: removed option: give the database in url: redis://host:port/db');
    expect(err.message).toContain('transport.tls: removed option: give a rediss:// url (or rediss:// cluster seeds); TLS options go in redisOptions.tls');
    expect(err.message).toContain('transport.dlqMaxLen: removed option: maxDeadLetters');
  });

  it('connectTimeoutMs names commandTimeoutMs, which bounds connecting', async () => {
    const err = await configError(() => createEventBus({ service: 's', events, transport: { type: 'redis-streams', connectTimeoutMs: 500 } } as never));
    expect(err.issues.map((i) => i.path.join('.'))).toEqual(['transport.connectTimeoutMs']);
    expect(err.message).toContain('transport.connectTimeoutMs: removed option: connecting is bounded by commandTimeoutMs');
  });

  it('username and password name url, the cluster seed URLs and redisOptions', async () => {
    for (const where of [{ url: 'redis://127.0.0.1:6379' }, { cluster: { nodes: ['127.0.0.1:7000'] } }]) {
      const transport = { type: 'redis-streams', ...where, username: 'app', password: 'secret' };
      const err = await configError(() => createEventBus({ service: 's', events, transport } as never));
      expect(err.issues.map((i) => i.path.join('.')).sort()).toEqual(['transport.password', 'transport.username']);
      expect(err.message).toContain('transport.username: removed option: give the user in url: redis://user:pass@host:port (with cluster, in the seed URLs), or in redisOptions.username');
      expect(err.message).toContain('transport.password: removed option: give the password in url: redis://user:pass@host:port (with cluster, in the seed URLs), or in redisOptions.password');
      expect(err.message).not.toContain('secret');
    }
  });
});

describe('removed native transport options', () => {
  it('arenaBytes, retain, batchSize and spinUs name what replaces them', async () => {
    const transport = { type: 'native', implementation: 'js', arenaBytes: 65_536, retain: 10, batchSize: 1, spinUs: 200 };
    const err = await configError(() => createEventBus({ service: 's', events, transport } as never));
    expect(err.issues.map((i) => i.path.join('.')).sort()).toEqual(['transport.arenaBytes', 'transport.batchSize', 'transport.retain', 'transport.spinUs']);
    expect(err.message).toContain("transport.arenaBytes: removed option: each ring's arena is sized from capacity and maxEventBytes");
    expect(err.message).toContain('transport.retain: removed option: maxLen');
    expect(err.message).toContain('transport.batchSize: removed option: a consumer pops one event per handler slot (concurrency)');
    expect(err.message).toContain('transport.spinUs: removed option: worker consumers sleep on a futex as soon as their ring is empty');
  });

  it('derives the arena from capacity and maxEventBytes, and the pop size from the ring and concurrency', () => {
    expect(arenaBytesFor(16_384, undefined)).toBe(4 * 1024 * 1024);
    expect(arenaBytesFor(65_536, undefined)).toBe(8 * 1024 * 1024);
    expect(arenaBytesFor(16, undefined)).toBe(4 * 1024 * 1024);
    expect(arenaBytesFor(16, 20_000)).toBe(80_000);
    expect(arenaBytesFor(2, 256)).toBe(1024);
    expect(arenaBytesFor(16_384, 64 * 1024 * 1024)).toBe(2 ** 28);
    expect(popBatchFor(16_384, 1)).toBe(1024);
    expect(popBatchFor(4, 1)).toBe(1);
    expect(popBatchFor(16, 1)).toBe(4);
    expect(popBatchFor(8, 8)).toBe(8);
    expect(popBatchFor(8, 64)).toBe(8);
    expect(popBatchFor(16_384, 4096)).toBe(4096);
  });
});

describe('removed noop transport options', () => {
  it('encode and maxInFlight say what the noop transport does instead', async () => {
    const err = await configError(() => createEventBus({ service: 's', events, transport: { type: 'noop', encode: true, maxInFlight: 4 } } as never));
    expect(err.issues.map((i) => i.path.join('.')).sort()).toEqual(['transport.encode', 'transport.maxInFlight']);
    expect(err.message).toContain('transport.encode: removed option: the noop transport takes events unencoded');
    expect(err.message).toContain('transport.maxInFlight: removed option: the noop transport takes one write at a time');
  });
});
