/**
 * The Redis Streams transport over TLS (`rediss://`) against a TLS-only redis-server with its own CA, given to
 * the transport the documented way (`redisOptions.tls.ca`): publishing, consuming in a group, retries and
 * the admin API all run over TLS, and a client that does not trust the CA is refused. On a TLS-only Redis
 * Cluster, `rediss://` seeds take TLS (and the CA) to every node the client discovers.
 */
import { Cluster, Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ConnectionError, createEventBus } from '../../src/index.js';
import { uniquePrefix } from '../helpers/redis-server.js';
import { TlsRedisCluster, TlsRedisServer } from '../helpers/redis-tls.js';
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
    const bus = createEventBus({ service: 'tls', events, transport: { type: 'redis-streams', url: server.url, prefix: uniquePrefix('tls-noca'), commandTimeoutMs: 2000 } });
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

describe('redis-streams over TLS on a Redis Cluster', () => {
  let cluster: TlsRedisCluster | undefined;
  beforeAll(async () => {
    cluster = await TlsRedisCluster.start(3);
  }, 120_000);
  afterAll(async () => {
    await cluster?.stop();
  });

  it('rediss:// seeds with the CA in redisOptions.tls: keyed events over 6 partitions on 3 masters, each consumed once', async () => {
    const c = cluster!;
    const bus = await createEventBus({
      service: 'tls',
      events,
      transport: { type: 'redis-streams', cluster: { nodes: c.seeds.slice(0, 1) }, redisOptions: { tls: { ca: c.ca } }, prefix: uniquePrefix('tlscluster'), partitions: 6 },
    });
    try {
      const seen: number[] = [];
      await bus.subscribe('order.created', { group: 'g', blockMs: 200 }, (e) => void seen.push(e.data.seq));
      await bus.publishMany('order.created', orders(300), { key: (o) => o.orderId });
      await bus.idle({ timeoutMs: 15_000 });
      expect(seen.sort((a, b) => a - b)).toEqual(orders(300).map((o) => o.seq));
      const admin = await (bus.transport as RedisStreamsTransport).admin();
      const streams = await admin.listStreams();
      expect(streams).toHaveLength(6);
      // The partitions are on more than one master, so the client reached discovered nodes over TLS too.
      const owners = new Set<number>();
      const raw = new Cluster([{ host: '127.0.0.1', port: c.servers[0]!.port }], { redisOptions: { tls: { ca: c.ca } } });
      try {
        for (const s of streams) {
          const slot = Number(await raw.call('CLUSTER', 'KEYSLOT', s.key));
          owners.add(Number(raw.slots[slot]![0]!.split(':')[1]));
        }
      } finally {
        raw.disconnect();
      }
      expect(owners.size).toBeGreaterThan(1);
    } finally {
      await bus.close();
    }
  });
});
