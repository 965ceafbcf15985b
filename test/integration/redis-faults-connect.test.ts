/**
 * Faults at connect against real redis-server processes: an unreachable server, wrong credentials, a standalone
 * server given as a cluster seed, a database the server has not got.
 */
import { inspect } from 'node:util';
import { describe, expect, it } from 'vitest';
import { Redis } from 'ioredis';
import { ConfigError, ConnectionError, createEventBus } from '../../src/index.js';
import { freePort, RedisServer } from '../helpers/redis-server.js';
import { perTestResources } from './fault-harness.js';
import { events, makeBus, orders } from './redis-common.js';

const { cleanup, server, bus } = perTestResources();

describe('redis-streams: faults', () => {
  it('unreachable Redis: connect rejects with ConnectionError naming the URL within the timeout', async () => {
    const port = await freePort();
    const url = `redis://127.0.0.1:${port}`;
    const t0 = Date.now();
    const err = await makeBus(url, { commandTimeoutMs: 500 }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ConnectionError);
    expect((err as Error).message).toContain(`127.0.0.1:${port}`);
    expect((err as Error).message).toContain('within 500 ms (transport.commandTimeoutMs)');
    expect(Date.now() - t0).toBeLessThan(5000);
  });

  it('passes credentials through; a wrong password is a ConnectionError that does not leak it', async () => {
    const s = await RedisServer.start({ extraArgs: ['--requirepass', 's3cret'] });
    cleanup.push(() => s.stop());
    const good = await bus(`redis://:s3cret@127.0.0.1:${s.port}`);
    await good.publish('order.created', orders(1)[0]!);
    const viaOption = await bus(s.url, { redisOptions: { password: 's3cret' } });
    await viaOption.publish('order.created', orders(1)[0]!);
    const err = await makeBus(`redis://:wrong-pass@127.0.0.1:${s.port}`, { commandTimeoutMs: 1000 }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ConnectionError);
    expect((err as Error).message).toContain(`127.0.0.1:${s.port}`);
    expect((err as Error).message).not.toContain('wrong-pass');
    expect((err as Error).message).toMatch(/refused the credentials \(the user and password in transport\.url, or in transport\.redisOptions\).*WRONGPASS/);
    // The whole error as Node prints it (an uncaught rejection, console.error), cause chain included.
    expect(inspect(err, { depth: Infinity, showHidden: true })).not.toContain('wrong-pass');
    const viaOptionErr = await makeBus(s.url, { redisOptions: { password: 'wrong-option-pass' }, commandTimeoutMs: 1000 }).catch((e: unknown) => e);
    expect(viaOptionErr).toBeInstanceOf(ConnectionError);
    expect(inspect(viaOptionErr, { depth: Infinity, showHidden: true })).not.toContain('wrong-option-pass');
  });

  it('a standalone server given as a cluster seed is a ConfigError saying it is not a Cluster, at once', async () => {
    const s = await server();
    const started = Date.now();
    const err = await createEventBus({ service: 't', events, transport: { type: 'redis-streams', cluster: { nodes: [{ host: '127.0.0.1', port: s.port }] }, commandTimeoutMs: 5000 } }).catch(
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(ConfigError);
    expect((err as Error).message).toMatch(/is not a Redis Cluster \(ERR This instance has cluster support disabled\): connect with transport\.url/);
    expect(Date.now() - started).toBeLessThan(2000);
  });

  it("a database the server has not got is a ConnectionError naming transport.url's /db at once, not a bus on db 0", async () => {
    const s = await server();
    const started = Date.now();
    const err = await makeBus(`${s.url}/99`, { commandTimeoutMs: 3000 }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ConnectionError);
    expect((err as Error).message).toMatch(/cannot select the database of transport\.url \(its \/db\).*DB index is out of range/);
    expect(Date.now() - started).toBeLessThan(2000);
    const ok = await bus(`${s.url}/3`);
    await ok.publish('order.created', orders(1)[0]!);
    const probe = new Redis(s.url);
    cleanup.push(() => void probe.disconnect());
    expect(await probe.dbsize()).toBe(0); // the bus never writes to db 0 when it was told db 3
    await probe.select(3);
    expect(await probe.dbsize()).toBeGreaterThan(0);
  });
});
