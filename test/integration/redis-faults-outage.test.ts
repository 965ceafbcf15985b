/**
 * Outages against real redis-server processes: a server stopped or crashed while buses use it, a restarted
 * server still loading, a restart with AOF, a restart empty (NOGROUP).
 */
import { describe, expect, it } from 'vitest';
import { Redis } from 'ioredis';
import { ConnectionError } from '../../src/index.js';
import { uniquePrefix } from '../helpers/redis-server.js';
import { TcpProxy } from '../helpers/tcp-proxy.js';
import { boundedClose, sleep, waitFor } from '../helpers/wait.js';
import { perTestResources } from './fault-harness.js';
import { blockedReader, fastRead, makeBus, orders } from './redis-common.js';

const { cleanup, server, bus } = perTestResources();

describe('redis-streams: faults', () => {
  it('Redis going away: publish rejects with ConnectionError after commandTimeoutMs, no hang', async () => {
    const s = await server();
    const b = await bus(s.url, { commandTimeoutMs: 300 });
    await b.publish('order.created', orders(1)[0]!);
    await s.stop();
    const err = await b.publish('order.created', orders(1, 1)[0]!).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ConnectionError);
    expect((err as Error).message).toContain(s.url);
  });

  it('close() returns while Redis is down and the read connection waits between reconnect attempts', async () => {
    const s = await server();
    const b = await bus(s.url, { commandTimeoutMs: 500 });
    const sub = await b.subscribe('order.created', { group: 'g', blockMs: 5000, minIdleMs: 60_000 }, () => undefined);
    const raw = new Redis(s.url);
    await blockedReader(raw);
    raw.disconnect();
    await s.crash();
    // The blocking read is owed a reply by a socket that is gone; the reconnect attempts are refused, and the
    // client waits between them (ioredis status 'reconnecting') nearly all the time.
    await sleep(300);
    // Disconnecting a client in that state settles none of its commands in ioredis (it cancels the reconnect and
    // no 'close' event comes to flush them): the transport rejects them, so neither the read loop nor close() waits forever.
    expect(await boundedClose(sub, 5000)).toBe('closed');
  });

  it('close() returns while the read connection has reconnected but is not ready yet (a restarted server still loading)', async () => {
    const s = await server();
    // The consumer reaches Redis through a proxy that can hold what its read connections send.
    const proxy = await TcpProxy.start(s.port);
    cleanup.push(() => proxy.stop());
    const b = await bus(proxy.url, { commandTimeoutMs: 500 });
    const sub = await b.subscribe('order.created', { group: 'g', blockMs: 5000, minIdleMs: 60_000 }, () => undefined);
    const raw = new Redis(s.url);
    cleanup.push(() => raw.disconnect());
    const id = await blockedReader(raw);
    // The read connection dies with its blocking read outstanding. It reconnects at once, but its handshake is
    // held, as a restarted server's ready check waits while it loads its data (ioredis status 'connect'): the
    // read waits in ioredis to be sent again at 'ready'.
    proxy.hold(/eventlane:read:/);
    await raw.client('KILL', 'ID', id);
    await waitFor(() => proxy.heldText.includes('eventlane:read:'), 5000, 'the reconnected read connection to send its handshake');
    // Disconnecting a client in that state rejects its queues in ioredis but not the commands kept for resending
    // (prevCommandQueue): the transport rejects those too, so neither the read loop nor close() waits forever.
    expect(await boundedClose(sub, 5000)).toBe('closed');
  });

  it('an outage with many writes waiting for the connection: each rejects in time, no listener pile-up', async () => {
    const s = await server();
    const b = await bus(s.url, { commandTimeoutMs: 500, partitions: 1 });
    await b.publish('order.created', orders(1)[0]!);
    const warnings: string[] = [];
    const onWarning = (w: Error): void => void warnings.push(w.name);
    process.on('warning', onWarning);
    cleanup.push(() => void process.off('warning', onWarning));
    await s.stop();
    // One write per publish (each awaited in its own turn), all waiting for the same connection.
    const pending: Promise<unknown>[] = [];
    for (let i = 0; i < 30; i++) {
      pending.push(b.publish('order.created', orders(1, 2 + i)[0]!).catch((e: unknown) => e));
      await sleep(5);
    }
    const errs = await Promise.all(pending);
    expect(errs.every((e) => e instanceof ConnectionError)).toBe(true);
    await sleep(50); // warnings are emitted on the next tick
    expect(warnings).not.toContain('MaxListenersExceededWarning');
  });

  it('AOF: events whose publish resolved survive a server restart', async () => {
    const s = await server({ aof: true });
    const prefix = uniquePrefix('aof');
    const b = await makeBus(s.url, { partitions: 2 }, prefix);
    await b.publishMany('order.created', orders(1000));
    await Promise.all(orders(100, 1000).map((o) => b.publish('order.created', o)));
    await b.close();
    await s.restart();
    const c = await bus(s.url, { partitions: 2 }, prefix);
    const seen = new Set<number>();
    await c.subscribe('order.created', { group: 'after-restart', startFrom: '0', ...fastRead }, (e) => void seen.add(e.data.seq));
    await waitFor(() => seen.size === 1100, 10_000, 'all 1100 events after restart');
  });

  it('a restarted empty server (NOGROUP) gets its groups recreated', async () => {
    const s = await server();
    const b = await bus(s.url);
    const seen = new Set<number>();
    await b.subscribe('order.created', { group: 'g', ...fastRead }, (e) => void seen.add(e.data.seq));
    await b.publishMany('order.created', orders(5));
    await waitFor(() => seen.size === 5, 5000, 'first events');
    const raw = new Redis(s.url);
    cleanup.push(() => raw.disconnect());
    await raw.flushall();
    await sleep(500);
    await b.publishMany('order.created', orders(5, 5));
    await waitFor(() => seen.size === 10, 10_000, 'events after FLUSHALL');
  });
});
