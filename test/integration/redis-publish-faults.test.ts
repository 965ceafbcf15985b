/**
 * Faults on the publishing side against real redis-server processes: a stalled server at close, a pool
 * connection killed while a write for several partitions waits for it, error replies for one entry.
 */
import { execFile } from 'node:child_process';
import { createServer, type AddressInfo } from 'node:net';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { Redis } from 'ioredis';
import { ClosedError, ConnectionError, PublishPartialError, TransportError } from '../../src/index.js';
import { partitionForKey } from '../../src/partition.js';
import { uniquePrefix, withRedis } from '../helpers/redis-server.js';
import { RecordedSettlement } from '../helpers/settlement.js';
import { boundedClose, sleep } from '../helpers/wait.js';
import { TcpProxy } from '../helpers/tcp-proxy.js';
import { silentLogger } from '../../src/logger.js';
import { createRedisStreamsTransport, streamKey } from '../../transports/redis-streams/index.js';
import { perTestResources } from './fault-harness.js';
import { makeBus, order } from './redis-common.js';

const { cleanup, server, bus } = perTestResources();

/** A key of `order.created` that lands on `partition` of `n`. */
function keyFor(partition: number, n: number): string {
  for (let i = 0; ; i++) if (partitionForKey(`k${i}`, n) === partition) return `k${i}`;
}

/** Kills the server's publish connection number `seq` (its client name ends with `:<seq>`). */
async function killPublishConnection(port: number, seq: number): Promise<void> {
  await withRedis(port, async (c) => {
    const list = (await c.client('LIST')) as string;
    const line = list.split('\n').find((l) => new RegExp(`name=eventlane:publish:\\d+:${seq} `).test(l));
    expect(line, 'the publish connection').toBeDefined();
    await c.client('KILL', 'ID', /id=(\d+)/.exec(line!)![1]!);
  });
}

/** Sets `maxmemory` to what the server uses now plus 256 KB: writes beyond that are refused with OOM. */
async function roomFor256KbMore(port: number): Promise<void> {
  await withRedis(port, async (c) => {
    const used = Number(/used_memory:(\d+)/.exec((await c.info('memory')) as string)![1]);
    await c.config('SET', 'maxmemory', String(used + 256 * 1024));
  });
}

/**
 * A per-event-entry bus (one partition) whose Redis holds event 0 and has room for ~256 KB more, and 2,000
 * orders padded to ~550 bytes (seq 1..2000): some of a burst of them fit, Redis refuses the rest with OOM.
 * `stored()` reads back the seqs of the stream, in order.
 */
async function perEventNearlyFull(name: string) {
  const s = await server();
  const prefix = uniquePrefix(name);
  const b = await bus(s.url, { partitions: 1, entryMode: 'event' }, prefix);
  await b.publish('order.created', order(0));
  await roomFor256KbMore(s.port);
  const payloads = Array.from({ length: 2000 }, (_, i) => ({ ...order(i + 1), orderId: `o-${i + 1}-${'x'.repeat(500)}` }));
  const stored = () => withRedis(s.port, async (c) => ((await c.xrange(streamKey(prefix, 'order.created', 0), '-', '+')) as [string, string[]][]).flatMap(([, f]) => seqsOf(f)));
  return { b, payloads, stored };
}

/** The `seq` of every event in a stream entry's fields, batch or per-event (docs/wire-format.md). */
function seqsOf(fields: string[]): number[] {
  const at = fields.indexOf('payloads');
  if (at >= 0) return (JSON.parse(fields[at + 1]!) as { seq: number }[]).map((d) => d.seq);
  return [(JSON.parse(fields[fields.indexOf('data') + 1]!) as { seq: number }).seq];
}

/**
 * A bus of `order.created` over 2 partitions whose partition 1 stream key holds a string: Redis refuses
 * every write there (WRONGTYPE) and takes partition 0's.
 */
async function partitionOneRefused(name: string) {
  const s = await server();
  const prefix = uniquePrefix(name);
  const b = await bus(s.url, { partitions: 2 }, prefix);
  const raw = new Redis(s.url);
  cleanup.push(() => raw.disconnect());
  await raw.set(streamKey(prefix, 'order.created', 1), 'not a stream');
  return { b, raw, prefix };
}

/**
 * createEventBus against `url` in a child process (fixtures/redis-unreachable.ts): how long the process lived
 * after the call rejected with ConnectionError (nothing of the bus may keep it alive).
 */
async function livedAfterReject(url: string, cluster = false, connectTimeoutMs = 300): Promise<number> {
  const fixture = fileURLToPath(new URL('./fixtures/redis-unreachable.ts', import.meta.url));
  const out = await new Promise<string>((resolve, reject) =>
    execFile(process.execPath, ['--import', 'tsx', fixture, url, cluster ? 'cluster' : 'url', String(connectTimeoutMs)], { encoding: 'utf8', timeout: 20_000 }, (err, stdout) =>
      err ? reject(err) : resolve(stdout),
    ),
  );
  const rejected = /rejected (\d+) ConnectionError/.exec(out);
  const exited = /exit (\d+)/.exec(out);
  expect(rejected, out).not.toBeNull();
  return Number(exited![1]) - Number(rejected![1]);
}

describe('redis-streams: publish faults', () => {
  it('a bus that could not connect does not keep its process alive', async () => {
    // No timer of the failed sockets (ioredis's disconnect timers) keeps it alive.
    expect(await livedAfterReject('redis://127.0.0.1:1')).toBeLessThan(1000);
  });

  it('a Cluster bus whose seed is unreachable does not keep its process alive', async () => {
    // A connect retry already scheduled when createEventBus gives up must not open the disconnected client
    // again (and so on every 100 ms, for as long as the process lives).
    expect(await livedAfterReject('redis://127.0.0.1:1', true)).toBeLessThan(1000);
    // Nor does any ioredis retry timer stacked by the connect() calls of the transport's own retry loop
    // (disconnect() does not clear them), however long it tried.
    expect(await livedAfterReject('redis://127.0.0.1:1', true, 3000)).toBeLessThan(500);
  });

  it('a bus that could not connect to a server that is not Redis (it answers, then closes) does not keep its process alive', async () => {
    // An HTTP-like server: each attempt opened a socket and sent the handshake again, and ioredis lost the
    // previous attempt's commands unsettled: their commandTimeoutMs (10 s) timers held the process.
    const srv = createServer((sock) => sock.end('HTTP/1.1 400 Bad Request\r\n\r\n'));
    await new Promise<void>((r) => srv.listen(0, '127.0.0.1', r));
    try {
      expect(await livedAfterReject(`redis://127.0.0.1:${(srv.address() as AddressInfo).port}`)).toBeLessThan(1000);
    } finally {
      srv.close();
    }
  });

  it('close() returns in bounded time while the server is stalled (SIGSTOP), and the publish in flight rejects', async () => {
    const s = await server();
    cleanup.push(() => s.resume());
    const b = await makeBus(s.url, { commandTimeoutMs: 500, connectTimeoutMs: 500 });
    await b.publish('order.created', order(1));
    s.pause();
    const inFlight = b.publish('order.created', order(2)).catch((e: unknown) => e);
    const started = Date.now();
    expect(await boundedClose(b, 5000)).toBe('closed');
    expect(Date.now() - started).toBeLessThan(3000);
    expect(await inFlight).toBeInstanceOf(ConnectionError);
  });

  it('close() twice: the second call resolves only once the first has closed the connections', async () => {
    const s = await server();
    cleanup.push(() => s.resume());
    const t = createRedisStreamsTransport({ type: 'redis-streams', url: s.url, commandTimeoutMs: 300 }, { service: 'it', logger: silentLogger, eventTypes: [], serializer: () => JSON.stringify });
    await t.connect();
    s.pause(); // QUIT gets no reply: the first close() takes commandTimeoutMs
    let first = false;
    void t.close().then(() => (first = true));
    await t.close();
    expect(first).toBe(true);
  });

  it('close() while the transport is still connecting: a write issued before it is stored, one issued after it rejects with ClosedError, no connection is left open', async () => {
    const s = await server();
    const t = createRedisStreamsTransport(
      { type: 'redis-streams', url: s.url, commandTimeoutMs: 3000, pool: { size: 2 } },
      { service: 'it-closing', logger: silentLogger, eventTypes: [], serializer: () => JSON.stringify },
    );
    const ev = {
      id: 'e1',
      type: 'order.created',
      time: Date.now(),
      key: undefined,
      data: { n: 1 },
      json: undefined,
      partition: 0,
      correlationId: undefined,
      causationId: undefined,
      headers: undefined,
    };
    const started = Date.now();
    const unit = { type: 'order.created', partition: 0, events: [ev], bytes: 0 };
    const before = t.write([unit], new RecordedSettlement()).then(
      () => 'stored',
      (e: unknown) => e,
    );
    const closing = t.close();
    const after = t.write([unit], new RecordedSettlement()).then(
      () => 'stored',
      (e: unknown) => e,
    );
    await closing;
    // close() waits for the connection, the write waiting for it goes out first, then QUIT lets its reply arrive.
    expect(await before).toBe('stored');
    expect(await after).toBeInstanceOf(ClosedError);
    expect(Date.now() - started).toBeLessThan(1000);
    expect(await withRedis(s.port, (c) => c.xlen(streamKey('el', 'order.created', 0)))).toBe(1);
    await sleep(100);
    const names = await withRedis(s.port, async (c) => ((await c.client('LIST')) as string).split('\n').filter((l) => l.includes('it-closing')));
    expect(names).toEqual([]);
    await expect(t.connect()).rejects.toBeInstanceOf(ClosedError);
  });

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

  it("an error reply for one partition rejects only that partition's events, with TransportError", async () => {
    const { b, raw, prefix } = await partitionOneRefused('wrongtype');
    const k0 = keyFor(0, 2);
    const k1 = keyFor(1, 2);
    const outcomes = await Promise.all(
      [k0, k1, k0, k1].map((k, i) =>
        b.publish('order.created', order(i), { key: k }).then(
          () => 'ok',
          (e: unknown) => e,
        ),
      ),
    );
    expect(outcomes[0]).toBe('ok');
    expect(outcomes[2]).toBe('ok');
    expect(outcomes[1]).toBeInstanceOf(TransportError);
    expect(outcomes[3]).toBeInstanceOf(TransportError);
    expect(String((outcomes[1] as Error).message)).toContain('WRONGTYPE');
    expect(await raw.xlen(streamKey(prefix, 'order.created', 0))).toBeGreaterThan(0);
  });

  it('OOM: every publish rejects with TransportError naming the reply, none hangs', async () => {
    const s = await server();
    const b = await bus(s.url, { partitions: 2 });
    await b.publish('order.created', order(0));
    await withRedis(s.port, (c) => c.config('SET', 'maxmemory', '1'));
    const outcomes = await Promise.all(
      Array.from({ length: 20 }, (_, i) =>
        b.publish('order.created', order(i), { key: `k${i}` }).then(
          () => 'ok',
          (e: unknown) => e,
        ),
      ),
    );
    for (const o of outcomes) {
      expect(o).toBeInstanceOf(TransportError);
      expect((o as Error).message).toContain('OOM');
    }
  });

  it('per-event entries: Redis refusing part of a unit (OOM) rejects exactly the publishes it did not store', async () => {
    const { b, payloads, stored } = await perEventNearlyFull('oompart');
    const outcomes = await Promise.all(
      payloads.map((d) =>
        b.publish('order.created', d).then(
          () => 'ok',
          (e: unknown) => e,
        ),
      ),
    );
    const ok = outcomes.flatMap((o, i) => (o === 'ok' ? [i + 1] : []));
    expect(ok.length).toBeGreaterThan(0);
    expect(ok.length).toBeLessThan(2000);
    for (const o of outcomes) if (o !== 'ok') expect(String((o as Error).message)).toContain('OOM');
    // Each publish settles with its own entry's fate: a unit (one tick's publishes) is not rejected as a whole
    // when Redis stored its first events.
    expect(await stored()).toEqual([0, ...ok]);
  });

  it('publishMany refused for one partition (WRONGTYPE): PublishPartialError names exactly the payloads not written, and publishing them again completes the call', async () => {
    const { b, raw, prefix } = await partitionOneRefused('manypart');
    const k0 = keyFor(0, 2);
    const k1 = keyFor(1, 2);
    const payloads = Array.from({ length: 300 }, (_, i) => order(i));
    const keyOf = (d: { seq: number }) => (d.seq % 3 === 0 ? k1 : k0);
    const err = await b.publishMany('order.created', payloads, { key: keyOf }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(PublishPartialError);
    const partial = err as PublishPartialError;
    const refused = payloads.flatMap((d, i) => (d.seq % 3 === 0 ? [i] : []));
    expect(partial.failed).toEqual(refused);
    expect(partial.accepted).toBe(200);
    expect(partial.code).toBe('ERR_PUBLISH_PARTIAL');
    expect(partial.retryable).toBe(true);
    expect(partial.cause).toBeInstanceOf(TransportError);
    expect(partial.message).toContain('WRONGTYPE');
    // Every other event is in Redis, in order; the refused ones go through once the key is fixed.
    const stored = async (p: number) => ((await raw.xrange(streamKey(prefix, 'order.created', p), '-', '+')) as [string, string[]][]).flatMap(([, f]) => seqsOf(f));
    expect(await stored(0)).toEqual(payloads.flatMap((d) => (d.seq % 3 === 0 ? [] : [d.seq])));
    await raw.del(streamKey(prefix, 'order.created', 1));
    await b.publishMany(
      'order.created',
      partial.failed.map((i) => payloads[i]!),
      { key: keyOf },
    );
    expect(await stored(1)).toEqual(refused);
  });

  it('publishMany of which nothing was written rejects with the transport error itself', async () => {
    const { b } = await partitionOneRefused('manynone');
    const err = await b
      .publishMany(
        'order.created',
        Array.from({ length: 50 }, (_, i) => order(i)),
        { key: keyFor(1, 2) },
      )
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(TransportError);
    expect((err as Error).message).toContain('WRONGTYPE');
  });

  it('per-event entries: publishMany part-refused by Redis (OOM) lists exactly the events Redis did not store', async () => {
    const { b, payloads, stored } = await perEventNearlyFull('manyoom');
    const err = await b.publishMany('order.created', payloads).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(PublishPartialError);
    const partial = err as PublishPartialError;
    expect(partial.message).toContain('OOM');
    expect(partial.failed.length).toBeGreaterThan(0);
    const failed = new Set(partial.failed);
    const written = payloads.flatMap((d, i) => (failed.has(i) ? [] : [d.seq]));
    expect(written.length).toBe(partial.accepted);
    expect(await stored()).toEqual([0, ...written]);
    // One reply per refused entry, all the same OOM: one distinct failure.
    expect(partial.errors).toHaveLength(1);
  });
});
