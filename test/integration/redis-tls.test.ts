/**
 * The Redis Streams transport over TLS (`rediss://`) against a TLS-only redis-server with its own CA, given to
 * the transport the documented way (`redisOptions.tls.ca`): publishing, consuming in a group, retries and
 * the admin API all run over TLS, and a client that does not trust the CA is refused.
 */
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ConnectionError, createEventBus } from '../../src/index.js';
import { uniquePrefix } from '../helpers/redis-server.js';
import { TlsRedisServer } from '../helpers/redis-tls.js';
import type { RedisStreamsTransport } from '../../transports/redis-streams/index.js';
import { events, orders } from './redis-common.js';

let server: TlsRedisServer;
beforeAll(async () => {
  server = await TlsRedisServer.start();
});
afterAll(async () => {
  await server?.stop();
});

describe('redis-streams over TLS', () => {
  it('publishes and consumes through rediss:// with the CA in redisOptions.tls', async () => {
    const prefix = uniquePrefix('tls');
    const bus = await createEventBus({ service: 'tls', events, transport: { type: 'redis-streams', url: server.url, prefix, partitions: 2, redisOptions: { tls: { ca: server.ca } } } });
    try {
      const seen: number[] = [];
      await bus.subscribe('order.created', { group: 'g', blockMs: 200, retry: { backoff: { initialMs: 10, maxMs: 20 } } }, (e, ctx) => {
        if (e.data.seq === 3 && ctx.attempt === 1) throw new Error('once');
        seen.push(e.data.seq);
      });
      await bus.publishMany('order.created', orders(200), { key: (o) => o.orderId });
      await bus.idle({ timeoutMs: 15_000 });
      expect(seen.sort((a, b) => a - b)).toEqual(orders(200).map((o) => o.seq));
      const admin = await (bus.transport as RedisStreamsTransport).admin();
      expect((await admin.groups('order.created')).map((g) => [g.group, g.lagEvents, g.pendingEvents])).toEqual([['g', 0, 0]]);
    } finally {
      await bus.close();
    }
    // The server has no plain-text port: everything above went over TLS.
    const raw = new Redis(server.url, { tls: { ca: server.ca } });
    try {
      expect(await raw.config('GET', 'port')).toEqual(['port', '0']);
      expect(await raw.xlen(`${prefix}:{order.created:0}`)).toBeGreaterThan(0);
    } finally {
      raw.disconnect();
    }
  });

  it('a client without the CA is refused: createEventBus rejects with ConnectionError naming the certificate', async () => {
    const bus = createEventBus({ service: 'tls', events, transport: { type: 'redis-streams', url: server.url, prefix: uniquePrefix('tls-noca'), connectTimeoutMs: 2000 } });
    const err = await bus.then(
      async (b) => {
        await b.close();
        return undefined;
      },
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(ConnectionError);
    expect(String((err as Error).message)).toMatch(/certificate/i);
  });
});
