/**
 * Faults of connections against real redis-server processes: connections killed mid-BLOCK, an XACK refused or
 * left unanswered across a reconnect, a blocking read that never returns.
 */
import { describe, expect, it } from 'vitest';
import { Redis } from 'ioredis';
import { createEventBus } from '../../src/index.js';
import { freePort, uniquePrefix } from '../helpers/redis-server.js';
import { TcpProxy } from '../helpers/tcp-proxy.js';
import { sleep, waitFor } from '../helpers/wait.js';
import { streamKey, type RedisStreamsTransport } from '../../transports/redis-streams/index.js';
import { perTestResources } from './fault-harness.js';
import { events, orders } from './redis-common.js';

const { cleanup, server, bus } = perTestResources();

describe('redis-streams: faults', () => {
  it('consumers resume after their connection is killed mid-BLOCK (CLIENT KILL)', async () => {
    const s = await server();
    const b = await bus(s.url);
    const seen = new Set<number>();
    await b.subscribe('order.created', { group: 'g', blockMs: 5000, minIdleMs: 1000 }, (e) => void seen.add(e.data.seq));
    await b.publishMany('order.created', orders(10));
    await waitFor(() => seen.size === 10, 5000, 'first events');
    await sleep(100); // the reader is inside XREADGROUP BLOCK now
    const raw = new Redis(s.url);
    cleanup.push(() => raw.disconnect());
    const list = String(await raw.client('LIST'));
    const readers = list.split('\n').filter((l) => l.includes('name=eventlane:read'));
    expect(readers.length).toBeGreaterThan(0);
    expect(readers.some((l) => l.includes('cmd=xreadgroup'))).toBe(true);
    for (const l of readers) await raw.client('KILL', 'ID', /id=(\d+)/.exec(l)![1]!);
    await b.publishMany('order.created', orders(10, 10));
    await waitFor(() => seen.size === 20, 10_000, 'events after the kill');
    // Kill everything, publishers too.
    await raw.client('KILL', 'TYPE', 'normal', 'SKIPME', 'yes');
    await b.publishMany('order.created', orders(10, 20));
    await waitFor(() => seen.size === 30, 10_000, 'events after killing all connections');
  });

  it('an XACK Redis refuses for a while (READONLY: a replica until a failover ends) is sent again: the entry is not redelivered', async () => {
    const s = await server();
    const b = await bus(s.url, { partitions: 1 });
    const raw = new Redis(s.url);
    cleanup.push(() => raw.disconnect());
    const deadMaster = await freePort();
    const handled = new Map<number, number>();
    // minIdleMs far beyond the test: only this consumer's own XACK can clear the entry. The last handler turns
    // the server into a replica of a master that is not there: it keeps its data and refuses writes (XACK
    // included) with READONLY until it is a master again.
    await b.subscribe('order.created', { group: 'g', blockMs: 200, minIdleMs: 60_000 }, async (e) => {
      handled.set(e.data.seq, (handled.get(e.data.seq) ?? 0) + 1);
      if (e.data.seq === 99) await raw.call('REPLICAOF', '127.0.0.1', String(deadMaster));
    });
    await b.publishMany('order.created', orders(100)); // one batch entry
    await waitFor(() => handled.size === 100, 5000, 'the entry handled');
    await sleep(1000);
    const key = streamKey((b.transport as RedisStreamsTransport).config.prefix, 'order.created', 0);
    expect(((await raw.xpending(key, 'g')) as [number])[0]).toBe(1); // its XACK was refused
    await raw.call('REPLICAOF', 'NO', 'ONE');
    await waitFor(async () => ((await raw.xpending(key, 'g')) as [number])[0] === 0, 5000, 'the entry acked');
    expect([...handled.values()].every((n) => n === 1)).toBe(true);
  });

  it('an XACK not yet answered when the reader reconnects and re-reads its pending entries: the entry is not handled again', async () => {
    const s = await server();
    // The consumer reaches Redis through a proxy that can hold its command connection's traffic (its XACKs).
    const proxy = await TcpProxy.start(s.port);
    cleanup.push(() => proxy.stop());
    const b = await bus(proxy.url, { partitions: 1, commandTimeoutMs: 10_000 });
    const raw = new Redis(s.url);
    cleanup.push(() => raw.disconnect());
    const handled = new Map<number, number>();
    let finish!: () => void;
    const last = new Promise<void>((resolve) => (finish = resolve));
    await b.subscribe('order.created', { group: 'g', blockMs: 1000, minIdleMs: 60_000 }, async (e) => {
      handled.set(e.data.seq, (handled.get(e.data.seq) ?? 0) + 1);
      if (e.data.seq === 99) await last;
    });
    await b.publishMany('order.created', orders(100)); // one batch entry, acked when its last event is done
    await waitFor(() => handled.size === 100, 5000, 'the entry handled');
    await sleep(100); // the reader is inside XREADGROUP BLOCK
    proxy.hold(/eventlane:command:/);
    finish();
    await waitFor(() => proxy.heldText.includes('xack'), 2000, 'the XACK held on its way');
    // The reader's connection dies: it reconnects and, once the blocking read it resent returns (blockMs),
    // re-reads its pending entries, the XACK still unanswered.
    const readers = String(await raw.client('LIST'))
      .split('\n')
      .filter((l) => l.includes('name=eventlane:read'));
    for (const l of readers) await raw.client('KILL', 'ID', /id=(\d+)/.exec(l)![1]!);
    await sleep(1800);
    proxy.release();
    const key = streamKey((b.transport as RedisStreamsTransport).config.prefix, 'order.created', 0);
    await waitFor(async () => ((await raw.xpending(key, 'g')) as [number])[0] === 0, 5000, 'the entry acked');
    await sleep(300);
    // The pending re-read does not deliver the entry's finished events again: none is handled twice.
    expect([...handled.values()].filter((n) => n > 1)).toEqual([]);
  });

  it('the read watchdog replaces a connection whose blocking read never returns', async () => {
    const s = await server();
    const warnings: string[] = [];
    const logger = { debug: () => undefined, info: () => undefined, error: () => undefined, warn: (_o: object, msg?: string) => void warnings.push(msg ?? '') };
    // The watchdog gives a read half of commandTimeoutMs past its BLOCK: 500 ms.
    const b = await createEventBus({ service: 'it', events, logger, transport: { type: 'redis-streams', url: s.url, prefix: uniquePrefix('watchdog'), commandTimeoutMs: 1000 } });
    cleanup.push(() => b.close());
    const seen = new Set<number>();
    await b.subscribe('order.created', { group: 'g', blockMs: 100 }, (e) => void seen.add(e.data.seq));
    const raw = new Redis(s.url);
    cleanup.push(() => raw.disconnect());
    // The server stops answering everyone for 1.5 s: reads outlive blockMs + the watchdog's 500 ms.
    await raw.client('PAUSE', 1500, 'ALL');
    await sleep(1000);
    await b.publishMany('order.created', orders(20));
    await waitFor(() => seen.size === 20, 10_000, 'events after the pause');
    expect(warnings.some((w) => w.includes('watchdog'))).toBe(true);
  });
});
