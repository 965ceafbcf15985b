/**
 * Faults on the publishing side against real redis-server processes, on the connections: a pool connection
 * killed while a write for several partitions waits for it or awaits its reply, a pipelined write cut after its
 * first reply, Redis killed with writes in flight.
 */
import { describe, expect, it } from 'vitest';
import { Redis } from 'ioredis';
import { ConnectionError } from '../../src/index.js';
import { uniquePrefix, withRedis } from '../helpers/redis-server.js';
import { sleep } from '../helpers/wait.js';
import { TcpProxy } from '../helpers/tcp-proxy.js';
import { streamKey } from '../../transports/redis-streams/index.js';
import { keyFor, perTestResources } from './fault-harness.js';
import { order } from './redis-common.js';

const { cleanup, server, bus } = perTestResources();

/** Kills the server's publish connection number `seq` (its client name ends with `:<seq>`). */
async function killPublishConnection(port: number, seq: number): Promise<void> {
  await withRedis(port, async (c) => {
    const list = (await c.client('LIST')) as string;
    const line = list.split('\n').find((l) => new RegExp(`name=eventlane:publish:\\d+:${seq} `).test(l));
    expect(line, 'the publish connection').toBeDefined();
    await c.client('KILL', 'ID', /id=(\d+)/.exec(line!)![1]!);
  });
}

describe('redis-streams: publish faults', () => {
  it("a write for two partitions waiting for one's connection is not overtaken on the other by a later publish (per-key order)", async () => {
    const s = await server();
    const prefix = uniquePrefix('order');
    const b = await bus(s.url, { partitions: 2, pool: { size: 2 }, commandTimeoutMs: 3000 }, prefix);
    const k0 = keyFor(0, 2);
    const k1 = keyFor(1, 2);
    // Partition p of the first type goes out on pool connection p.
    await b.publishMany('order.created', [order(0), order(0)], { key: (_, i) => (i === 0 ? k0 : k1) });
    await killPublishConnection(s.port, 1);
    await sleep(10); // noticed, not yet reconnected (ioredis waits 50 ms)
    const first = b.publishMany('order.created', [order(1), order(2)], { key: (_, i) => (i === 0 ? k0 : k1) });
    await sleep(1);
    const second = b.publish('order.created', order(3), { key: k0 });
    await Promise.all([first, second]);
    const entries = await withRedis(s.port, (c) => c.xrange(streamKey(prefix, 'order.created', 0), '-', '+'));
    const seqs = entries.map(([, fields]) => Number(/"seq":(\d+)/.exec(fields.join(' '))![1]));
    expect(seqs).toEqual([0, 1, 3]);
  });

  it('a connection killed while writes await their reply rejects them at once (not after commandTimeoutMs), and only the writes it carried', async () => {
    const s = await server();
    const prefix = uniquePrefix('killed');
    const b = await bus(s.url, { partitions: 2, pool: { size: 2 }, commandTimeoutMs: 5000 }, prefix);
    const k0 = keyFor(0, 2);
    const k1 = keyFor(1, 2);
    await b.publishMany('order.created', [order(0), order(0)], { key: (_, i) => (i === 0 ? k0 : k1) });
    const raw = new Redis(s.url);
    cleanup.push(() => raw.disconnect());
    await raw.client('PAUSE', 3000, 'WRITE'); // the XADDs wait in the server: in flight
    cleanup.push(() => void raw.client('UNPAUSE').catch(() => undefined));
    // One write on the connection that will be killed; then one write with a unit on each connection.
    const alone = b.publish('order.created', order(1), { key: k1 }).then(
      () => 'ok',
      (e: unknown) => e,
    );
    await sleep(20);
    const p0 = b.publish('order.created', order(2), { key: k0 }).then(
      () => 'ok',
      (e: unknown) => e,
    );
    const p1 = b.publish('order.created', order(3), { key: k1 }).then(
      () => 'ok',
      (e: unknown) => e,
    );
    await sleep(100);
    const killed = Date.now();
    await killPublishConnection(s.port, 1);
    expect(await alone).toBeInstanceOf(ConnectionError);
    expect(Date.now() - killed).toBeLessThan(1000);
    await raw.client('UNPAUSE');
    expect(await p1).toBeInstanceOf(ConnectionError);
    expect(await p0).toBe('ok'); // its unit went out on the other connection: accepted
    await b.publish('order.created', order(4), { key: k1 }); // the killed one reconnected
    const seqs = async (p: number) => (await raw.xrange(streamKey(prefix, 'order.created', p), '-', '+')).map(([, f]) => Number(/"seq":(\d+)/.exec(f.join(' '))![1]));
    expect(await seqs(0)).toEqual([0, 2]);
    expect(await seqs(1)).toEqual([0, 4]);
  });

  it('a pipelined write cut after its first reply: the rest is ambiguous, a ConnectionError saying it may have been applied', async () => {
    const s = await server();
    const proxy = await TcpProxy.start(s.port);
    cleanup.push(() => proxy.stop());
    const prefix = uniquePrefix('aborted');
    const b = await bus(proxy.url, { partitions: 2, pool: { size: 1 }, commandTimeoutMs: 5000 }, prefix);
    const k0 = keyFor(0, 2);
    const k1 = keyFor(1, 2);
    await b.publishMany('order.created', [order(0), order(0)], { key: (_, i) => (i === 0 ? k0 : k1) });
    // Redis stores both XADDs of the next write; the client sees the first reply, then the connection drops.
    proxy.cutAfterOneReply(/eventlane:publish:/);
    const results = await Promise.all(
      [order(1), order(2)].map((o, i) =>
        b.publish('order.created', o, { key: i === 0 ? k0 : k1 }).then(
          () => 'ok',
          (e: unknown) => e,
        ),
      ),
    );
    expect(results[0]).toBe('ok');
    expect(results[1]).toBeInstanceOf(ConnectionError);
    expect((results[1] as Error).message).toMatch(/may or may not have been applied/);
    const stored = async (p: number) => withRedis(s.port, async (c) => (await c.xrange(streamKey(prefix, 'order.created', p), '-', '+')).length);
    expect([await stored(0), await stored(1)]).toEqual([2, 2]);
    await b.publish('order.created', order(3), { key: k1 }); // reconnected
  });

  it('Redis killed (SIGKILL) with writes awaiting their reply, then restarted: they reject at once, later publishes succeed', async () => {
    const s = await server();
    const b = await bus(s.url, { partitions: 2, commandTimeoutMs: 5000 });
    await b.publish('order.created', order(0));
    await withRedis(s.port, (c) => c.client('PAUSE', 5000, 'WRITE'));
    const inFlight = Array.from({ length: 10 }, (_, i) => b.publish('order.created', order(i), { key: `k${i}` }).catch((e: unknown) => e));
    await sleep(100);
    const killed = Date.now();
    await s.crash();
    for (const e of await Promise.all(inFlight)) expect(e).toBeInstanceOf(ConnectionError);
    expect(Date.now() - killed).toBeLessThan(1000);
    await s.restart();
    await b.publish('order.created', order(11), { key: 'k1' });
  });
});
