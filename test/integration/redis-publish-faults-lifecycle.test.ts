/**
 * Faults on the publishing side against real redis-server processes, at connect and close: a bus that could not
 * connect, a stalled server at close, close() while still connecting.
 */
import { execFile } from 'node:child_process';
import { createServer, type AddressInfo } from 'node:net';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { ClosedError, ConnectionError } from '../../src/index.js';
import { withRedis } from '../helpers/redis-server.js';
import { RecordedSettlement } from '../helpers/settlement.js';
import { boundedClose, sleep } from '../helpers/wait.js';
import { silentLogger } from '../../src/logger.js';
import { createRedisStreamsTransport, streamKey } from '../../transports/redis-streams/index.js';
import { perTestResources } from './fault-harness.js';
import { makeBus, order } from './redis-common.js';

const { cleanup, server } = perTestResources();

/**
 * createEventBus against `url` in a child process (fixtures/redis-unreachable.ts): how long the process lived
 * after the call rejected with ConnectionError (nothing of the bus may keep it alive).
 */
async function livedAfterReject(url: string, cluster = false, commandTimeoutMs = 300): Promise<number> {
  const fixture = fileURLToPath(new URL('./fixtures/redis-unreachable.ts', import.meta.url));
  const out = await new Promise<string>((resolve, reject) =>
    execFile(process.execPath, ['--import', 'tsx', fixture, url, cluster ? 'cluster' : 'url', String(commandTimeoutMs)], { encoding: 'utf8', timeout: 20_000 }, (err, stdout) =>
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
    // An HTTP-like server: each attempt resends the handshake and ioredis loses the previous attempt's commands
    // unsettled; no commandTimeoutMs timer of theirs (3 s here, past the bound) may hold the process.
    const srv = createServer((sock) => sock.end('HTTP/1.1 400 Bad Request\r\n\r\n'));
    await new Promise<void>((r) => srv.listen(0, '127.0.0.1', r));
    try {
      expect(await livedAfterReject(`redis://127.0.0.1:${(srv.address() as AddressInfo).port}`, false, 3000)).toBeLessThan(1000);
    } finally {
      srv.close();
    }
  });

  it('close() returns in bounded time while the server is stalled (SIGSTOP), and the publish in flight rejects', async () => {
    const s = await server();
    cleanup.push(() => s.resume());
    const b = await makeBus(s.url, { commandTimeoutMs: 500 });
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
});
