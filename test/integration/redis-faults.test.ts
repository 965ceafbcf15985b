/**
 * Faults against real redis-server processes: a consumer killed with SIGKILL, connections killed
 * mid-BLOCK, an unreachable server, a server restart with AOF.
 */
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { inspect } from 'node:util';
import { describe, expect, it } from 'vitest';
import { Redis } from 'ioredis';
import { ConfigError, ConnectionError, createEventBus } from '../../src/index.js';
import { freePort, RedisServer, uniquePrefix } from '../helpers/redis-server.js';
import { TcpProxy } from '../helpers/tcp-proxy.js';
import { boundedClose, sleep, waitFor } from '../helpers/wait.js';
import { streamKey, type RedisStreamsTransport } from '../../transports/redis-streams/index.js';
import { perTestResources } from './fault-harness.js';
import { blockedReader, events, fastRead, makeBus, orders } from './redis-common.js';

const { cleanup, server, bus } = perTestResources();

describe('redis-streams: faults', () => {
  it('entries pending on a consumer killed with SIGKILL are reclaimed by the others', async () => {
    const s = await server();
    const prefix = uniquePrefix('sigkill');
    const fixture = fileURLToPath(new URL('./fixtures/redis-hanging-consumer.ts', import.meta.url));
    const child = spawn(process.execPath, ['--import', 'tsx', fixture, s.url, prefix], { stdio: ['ignore', 'pipe', 'inherit'] });
    cleanup.push(() => {
      if (child.exitCode === null) child.kill('SIGKILL');
    });
    const childGot = new Set<number>();
    let ready = false;
    let buf = '';
    child.stdout!.on('data', (d: Buffer) => {
      buf += d.toString();
      let nl: number;
      while ((nl = buf.indexOf('\n')) >= 0) {
        const line = buf.slice(0, nl);
        buf = buf.slice(nl + 1);
        if (line === 'ready') ready = true;
        else if (line.startsWith('got ')) childGot.add(Number(line.slice(4)));
      }
    });
    await waitFor(() => ready, 20_000, 'the child consumer');
    const pub = await bus(s.url, {}, prefix);
    await pub.publishMany('order.created', orders(500));
    await waitFor(() => childGot.size === 500, 10_000, 'the child to take all 500');
    child.kill('SIGKILL');
    await new Promise((r) => child.once('exit', r));
    // The survivor joins the same group and reclaims the victim's idle entries.
    const seen = new Set<number>();
    await pub.subscribe('order.created', { group: 'g', consumer: 'survivor', concurrency: 16, blockMs: 100, minIdleMs: 300 }, (e, ctx) => {
      expect(ctx.attempt).toBe(2);
      seen.add(e.data.seq);
    });
    await waitFor(() => seen.size === 500, 15_000, 'all 500 reclaimed');
    const raw = new Redis(s.url);
    cleanup.push(() => raw.disconnect());
    await waitFor(async () => ((await raw.xpending(streamKey(prefix, 'order.created', 0), 'g')) as [number])[0] === 0, 5000, 'pending 0');
  });

  it('a consumer restarting under the same name finishes its own pending entries first', async () => {
    const s = await server();
    const prefix = uniquePrefix('ownpending');
    const fixture = fileURLToPath(new URL('./fixtures/redis-hanging-consumer.ts', import.meta.url));
    const child = spawn(process.execPath, ['--import', 'tsx', fixture, s.url, prefix], { stdio: ['ignore', 'pipe', 'inherit'] });
    cleanup.push(() => {
      if (child.exitCode === null) child.kill('SIGKILL');
    });
    let out = '';
    child.stdout!.on('data', (d: Buffer) => (out += d.toString()));
    await waitFor(() => out.includes('ready'), 20_000, 'the child consumer');
    const pub = await bus(s.url, {}, prefix);
    await pub.publishMany('order.created', orders(100));
    await waitFor(() => out.split('\n').filter((l) => l.startsWith('got ')).length === 100, 10_000, 'the child to take all 100');
    child.kill('SIGKILL');
    await new Promise((r) => child.once('exit', r));
    // Same consumer name, reclaim effectively off: only the own-pending drain can deliver these.
    const seen = new Map<number, number>();
    await pub.subscribe('order.created', { group: 'g', consumer: 'victim', blockMs: 100, minIdleMs: 600_000 }, (e, ctx) => void seen.set(e.data.seq, ctx.attempt));
    await waitFor(() => seen.size === 100, 10_000, 'the 100 pending events');
    expect([...seen.values()].every((a) => a === 2)).toBe(true);
  });

  // Restarted under the same name, the consumer meets the crashing entry in its own pending drain; under
  // a new name each time (the default name holds the pid), through reclaim. Either way it dies alone.
  it.each([
    ['the same consumer name (own pending drain)', []],
    ['a new consumer name every run (reclaim)', ['reclaim']],
  ])(
    'an event that kills its consumer is isolated and dead-lettered alone (crash loop, %s)',
    async (_, mode) => {
      const s = await server();
      const prefix = uniquePrefix('crashloop');
      const fixture = fileURLToPath(new URL('./fixtures/redis-crashing-consumer.ts', import.meta.url));
      const pub = await bus(s.url, { partitions: 1 }, prefix);
      const got = new Set<number>();
      await pub.publishMany('order.created', orders(30)); // one batch entry
      const t = pub.transport as RedisStreamsTransport;
      for (let run = 0; run < 10 && (await t.deadLetters('order.created', 'g')).length === 0; run++) {
        const child = spawn(process.execPath, ['--import', 'tsx', fixture, s.url, prefix, ...mode], { stdio: ['ignore', 'pipe', 'inherit'] });
        cleanup.push(() => {
          if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
        });
        let out = '';
        child.stdout!.on('data', (d: Buffer) => {
          out += d.toString();
          for (const m of out.matchAll(/got (\d+) /g)) got.add(Number(m[1]));
        });
        // It dies on seq 13, or goes idle once 13 is dead-lettered.
        await Promise.race([new Promise((r) => child.once('exit', r)), sleep(4000)]);
        if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
      }
      const dead = await t.deadLetters('order.created', 'g');
      expect(dead.map((d) => (d.event?.data as { seq: number } | undefined)?.seq)).toEqual([13]);
      expect(dead[0]!.error).toContain('without an ack');
      await waitFor(() => got.size === 29, 5000, 'all other events handled');
    },
    90_000,
  );

  it('deletes long-idle consumers without pending entries, never one that holds entries', async () => {
    const s = await server();
    const prefix = uniquePrefix('prune');
    const b = await bus(s.url, { partitions: 1 }, prefix);
    const key = streamKey(prefix, 'order.created', 0);
    const raw = new Redis(s.url);
    cleanup.push(() => raw.disconnect());
    await raw.xgroup('CREATE', key, 'g', '$', 'MKSTREAM');
    await raw.xgroup('CREATECONSUMER', key, 'g', 'gone-empty');
    await raw.xadd(key, '*', 'data', '{"orderId":"x","amount":1,"seq":1}');
    await raw.xreadgroup('GROUP', 'g', 'gone-holding', 'COUNT', 1, 'STREAMS', key, '>');
    await sleep(300);
    // The first reclaim pass (after minIdleMs / 2) deletes idle consumers; gone-holding's entry is not idle past
    // minIdleMs yet, so it is not reclaimed from it before that.
    await b.subscribe('order.created', { group: 'g', consumer: 'alive', blockMs: 100, minIdleMs: 2000, deleteIdleConsumersMs: 200 }, () => undefined);
    const names = async () => ((await raw.xinfo('CONSUMERS', key, 'g')) as unknown[][]).map((r) => String(r[1])).sort();
    await waitFor(async () => !(await names()).includes('gone-empty'), 5000, 'the idle empty consumer to go');
    expect(await names()).toEqual(['alive', 'gone-holding']);
  });

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

  it('unreachable Redis: connect rejects with ConnectionError naming the URL within the timeout', async () => {
    const port = await freePort();
    const url = `redis://127.0.0.1:${port}`;
    const t0 = Date.now();
    const err = await makeBus(url, { connectTimeoutMs: 500 }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ConnectionError);
    expect((err as Error).message).toContain(`127.0.0.1:${port}`);
    expect((err as Error).message).toContain('connectTimeoutMs');
    expect(Date.now() - t0).toBeLessThan(5000);
  });

  it('passes credentials through; a wrong password is a ConnectionError that does not leak it', async () => {
    const s = await RedisServer.start({ extraArgs: ['--requirepass', 's3cret'] });
    cleanup.push(() => s.stop());
    const good = await bus(`redis://:s3cret@127.0.0.1:${s.port}`);
    await good.publish('order.created', orders(1)[0]!);
    const viaOption = await bus(s.url, { password: 's3cret' });
    await viaOption.publish('order.created', orders(1)[0]!);
    const err = await makeBus(`redis://:wrong-pass@127.0.0.1:${s.port}`, { connectTimeoutMs: 1000 }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ConnectionError);
    expect((err as Error).message).toContain(`127.0.0.1:${s.port}`);
    expect((err as Error).message).not.toContain('wrong-pass');
    expect((err as Error).message).toMatch(/credentials|WRONGPASS/);
    // The whole error as Node prints it (an uncaught rejection, console.error), cause chain included.
    expect(inspect(err, { depth: Infinity, showHidden: true })).not.toContain('wrong-pass');
    const viaOptionErr = await makeBus(s.url, { password: 'wrong-option-pass', connectTimeoutMs: 1000 }).catch((e: unknown) => e);
    expect(viaOptionErr).toBeInstanceOf(ConnectionError);
    expect(inspect(viaOptionErr, { depth: Infinity, showHidden: true })).not.toContain('wrong-option-pass');
  });

  it('a standalone server given as a cluster seed is a ConfigError saying it is not a Cluster, at once', async () => {
    const s = await server();
    const started = Date.now();
    const err = await createEventBus({ service: 't', events, transport: { type: 'redis-streams', cluster: { nodes: [{ host: '127.0.0.1', port: s.port }] }, connectTimeoutMs: 5000 } }).catch(
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(ConfigError);
    expect((err as Error).message).toMatch(/is not a Redis Cluster \(ERR This instance has cluster support disabled\): connect with transport\.url/);
    expect(Date.now() - started).toBeLessThan(2000);
  });

  it("a database the server has not got is a ConnectionError naming transport.url's /db at once, not a bus on db 0", async () => {
    const s = await server();
    const started = Date.now();
    const err = await makeBus(`${s.url}/99`, { connectTimeoutMs: 3000 }).catch((e: unknown) => e);
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
  // A consumer stopped (SIGSTOP) past minIdleMs while a handler runs: another reclaims what it held and runs
  // it. Resumed, the stalled one must not take the entries back with its keepalive, nor run the events it had
  // not started: they are the other's now. Per-event entries stay pending on the other while it runs them; a
  // batch entry is acked by it at once (split into per-event retry entries, as every redelivered batch is).
  // The other has a slot for each entry (a claim takes no more entries than it has free handler slots), and
  // its handlers hold every event until released, so it holds all three at once.
  it.each([
    ['per-event entries, still held by the other', 'event'],
    ['a batch entry, acked by the other', 'batch'],
  ])(
    'a stalled consumer leaves entries reclaimed by another to it (%s)',
    async (_, entryMode) => {
      const s = await server();
      const prefix = uniquePrefix('stall');
      const fixture = fileURLToPath(new URL('./fixtures/redis-stalling-consumer.ts', import.meta.url));
      const child = spawn(process.execPath, ['--import', 'tsx', fixture, s.url, prefix, entryMode], { stdio: ['ignore', 'pipe', 'inherit'] });
      cleanup.push(() => {
        if (child.exitCode === null) child.kill('SIGKILL');
      });
      let out = '';
      child.stdout!.on('data', (d: Buffer) => (out += d.toString()));
      await waitFor(() => out.includes('ready'), 20_000, 'the child consumer');
      const pub = await bus(s.url, { partitions: 1, entryMode }, prefix);
      await pub.publishMany('order.created', orders(3));
      await waitFor(() => out.includes('got 0'), 10_000, 'the child to start seq 0');
      const raw = new Redis(s.url);
      cleanup.push(() => raw.disconnect());
      const key = streamKey(prefix, 'order.created', 0);
      // Stopped only once every entry was read by it: its blocking read, woken by the first of the three XADDs,
      // got seq 0 alone and the others on its next read. Stopped before that read (a slow run), the rescuer read
      // seq 1 and 2 as new entries ahead of reclaiming seq 0, and the wait for seq 0 below timed out.
      const entries = entryMode === 'event' ? 3 : 1;
      await waitFor(async () => ((await raw.xpending(key, 'g')) as [number])[0] === entries, 10_000, 'the child to have read every entry');
      child.kill('SIGSTOP');
      cleanup.push(() => void child.kill('SIGCONT'));
      let release!: () => void;
      const released = new Promise<void>((r) => (release = r));
      const rescued: number[] = [];
      await pub.subscribe('order.created', { group: 'g', consumer: 'rescuer', concurrency: 3, blockMs: 100, minIdleMs: 600 }, async (e) => {
        rescued.push(e.data.seq);
        await released;
      });
      await waitFor(() => rescued.includes(0), 10_000, 'the rescuer to reclaim seq 0');
      const owners = async () => ((await raw.xpending(key, 'g', '-', '+', 10)) as [string, string][]).map((p) => p[1]);
      const allRescuers = entryMode === 'event' ? 'rescuer,rescuer,rescuer' : '';
      // Not at once: the child read seq 0 before the others, so seq 0 can go idle past minIdleMs (and be
      // reclaimed) a pass before them.
      await waitFor(async () => (await owners()).join() === allRescuers, 5000, 'the rescuer to own every entry');
      child.kill('SIGCONT');
      // The child's keepalive runs at once (overdue); its seq-0 handler ends ~4 s after it started.
      await sleep(4000);
      expect((await owners()).join()).toBe(allRescuers);
      release();
      await waitFor(() => rescued.length === 3, 10_000, 'the rescuer to finish');
      await sleep(500);
      expect(out.split('\n').filter((l) => l.startsWith('got '))).toEqual(['got 0']);
      expect([...rescued].sort()).toEqual([0, 1, 2]);
      await waitFor(async () => ((await raw.xpending(key, 'g')) as [number])[0] === 0, 5000, 'pending 0');
    },
    30_000,
  );
});
