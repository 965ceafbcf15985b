/**
 * `bus.health()` on Redis against a real redis-server that crashes and comes back: the transport reports
 * itself disconnected with the connection's error, the subscription `reconnecting`, each answered at once;
 * both recover with the server.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createEventBus } from '../../src/index.js';
import { RedisServer, uniquePrefix } from '../helpers/redis-server.js';
import { waitFor } from '../helpers/wait.js';
import { events, fastRead } from './redis-common.js';

let server: RedisServer;
beforeAll(async () => void (server = await RedisServer.start()));
afterAll(async () => void (await server?.stop()));

describe('redis-streams: bus.health()', () => {
  it('reports the lost connection and a reconnecting subscription while the server is down, and ok once it is back', async () => {
    const b = await createEventBus({ service: 'health', events, logger: false, transport: { type: 'redis-streams', url: server.url, prefix: uniquePrefix('health'), partitions: 2 } });
    try {
      const seen: number[] = [];
      await b.subscribe('order.created', { group: 'g', ...fastRead }, (e) => void seen.push(e.data.seq));
      await b.publish('order.created', { orderId: 'o-1', amount: 1, seq: 1 });
      await waitFor(() => seen.length === 1, 10_000, 'the first delivery');
      const up = b.health();
      expect(up.ok).toBe(true);
      expect(up.transport).toMatchObject({ type: 'redis-streams', connected: true });
      expect(up.subscriptions[0]).toMatchObject({ group: 'g', state: 'running' });
      expect(up.subscriptions[0]!.lastDeliveryAt).toBeTypeOf('number');

      const crashedAt = Date.now();
      await server.crash();
      await waitFor(() => !b.health().transport.connected, 10_000, 'the loss to show');
      const down = b.health();
      expect(down.ok).toBe(false);
      expect(down.transport.since).toBeGreaterThanOrEqual(crashedAt);
      await waitFor(() => b.health().transport.lastError !== undefined, 10_000, 'a connection error');
      expect(b.health().transport.lastError).toMatchObject({ name: expect.any(String), message: expect.stringMatching(/ECONNREFUSED|closed|connect/i) });
      expect(b.health().subscriptions[0]!.state).toBe('reconnecting');

      await server.restart();
      await waitFor(() => b.health().ok, 15_000, 'the connections and the subscription to recover');
      await b.publish('order.created', { orderId: 'o-2', amount: 1, seq: 2 });
      await waitFor(() => seen.includes(2), 15_000, 'a delivery after the restart');
      expect(b.health().transport.connected).toBe(true);
    } finally {
      await b.close();
    }
  });
});
