/**
 * The Redis Streams consumer's read connection against a real redis-server: a blocking read interrupted
 * by CLIENT UNBLOCK, the read watchdog while handlers hold the event loop, acks sent with the next read (the
 * one ioredis internal the consumer reads, pinned here).
 */
import { describe, expect, it } from 'vitest';
import { Cluster, Redis } from 'ioredis';
import { createEventBus, type EventBus, type Logger } from '../../src/index.js';
import { uniquePrefix } from '../helpers/redis-server.js';
import { sleep, waitFor } from '../helpers/wait.js';
import { streamKey } from '../../transports/redis-streams/index.js';
import { corkable } from '../../transports/redis-streams/connection.js';
import { blockedReader, events, loseServedRead, order, orders, readConnection, recordingLogger, redisForFile } from './redis-common.js';

type Bus = EventBus<typeof events>;

const r = redisForFile();

async function bus(prefix: string, logger: Logger, transport: Record<string, unknown> = {}): Promise<Bus> {
  const b = await createEventBus({ service: 'it', events, logger, transport: { type: 'redis-streams', url: r.server.url, prefix, partitions: 1, ...transport } });
  r.cleanup.push(() => b.close());
  return b;
}

function busyWait(ms: number): void {
  const until = Date.now() + ms;
  while (Date.now() < until) {
    // holds the event loop, as a CPU-bound synchronous handler does
  }
}

describe('redis-streams consumer: a blocking read interrupted with CLIENT UNBLOCK', () => {
  it('is read again at once and logged at debug level, without a pending drain (a held entry is not delivered again)', async () => {
    const prefix = uniquePrefix('unblock');
    const key = streamKey(prefix, 'order.created', 0);
    const logger = recordingLogger();
    const b = await bus(prefix, logger);
    let release!: () => void;
    const released = new Promise<void>((r) => (release = r));
    r.cleanup.push(() => release()); // before close(), should the test fail while seq 0 is held
    const seen: string[] = [];
    await b.subscribe('order.created', { group: 'g', consumer: 'c', concurrency: 4, blockMs: 10_000, minIdleMs: 60_000 }, async (e, ctx) => {
      seen.push(`${e.data.seq}@${ctx.attempt}`);
      if (e.data.seq === 0) await released;
    });
    await b.publish('order.created', order(0));
    await waitFor(() => seen.length === 1, 5000, 'seq 0 to start');
    // TIMEOUT: Redis answers the read as if BLOCK had run out. ERROR: an -UNBLOCKED error reply. Neither delivered anything.
    for (const mode of ['TIMEOUT', 'ERROR']) expect(await r.raw.call('CLIENT', 'UNBLOCK', await blockedReader(r.raw), mode)).toBe(1);
    await blockedReader(r.raw);
    await b.publish('order.created', order(1));
    await waitFor(() => seen.length === 2, 5000, 'seq 1');
    // Seq 0, still running here, was delivered once: the ERROR does not send the loop back to the pending drain, whose
    // XREADGROUP ... 0 would deliver it again (delivery count 2: a crash then would cost it an attempt it never ran).
    const pending = (await r.raw.xpending(key, 'g', '-', '+', 10)) as [string, string, number, number][];
    expect(pending[0]![3]).toBe(1);
    release();
    await waitFor(async () => ((await r.raw.xpending(key, 'g')) as [number])[0] === 0, 5000, 'both acked');
    expect(seen).toEqual(['0@1', '1@1']);
    // An unblocked read is no failure: no 'redis read failed; retrying' warning, and no backoff.
    expect(logger.lines.filter((l) => l.level === 'warn' || l.level === 'error')).toEqual([]);
    expect(logger.lines.filter((l) => l.level === 'debug' && l.msg.includes('CLIENT UNBLOCK'))).toEqual([
      { level: 'debug', obj: expect.objectContaining({ group: 'g', err: expect.stringMatching(/^UNBLOCKED/) }), msg: expect.any(String) },
    ]);
  });
});

describe('redis-streams consumer: the read watchdog', () => {
  it('does not take a read-ahead for a hang when its reply waited while synchronous handlers held the event loop', async () => {
    const prefix = uniquePrefix('busyloop');
    const logger = recordingLogger();
    const b = await bus(prefix, logger, { entryMode: 'event', commandTimeoutMs: 400 });
    await b.publishMany('order.created', orders(10));
    const seen: string[] = [];
    // Reads of 5 entries (a read asks for at most prefetch): each reply is full, so the next read is sent before its
    // 5 handlers run, 100 ms each, with the event loop held: 500 ms, past blockMs + the watchdog's commandTimeoutMs / 2.
    // The read's reply has come, unread, meanwhile.
    await b.subscribe('order.created', { group: 'g', startFrom: '0', prefetch: 5, blockMs: 100, minIdleMs: 60_000 }, (e, ctx) => {
      seen.push(`${e.data.seq}@${ctx.attempt}`);
      busyWait(100);
    });
    await waitFor(() => seen.length >= 10, 10_000, 'the 10 events');
    await sleep(300);
    // The watchdog does not fire at its first turn after the handlers: dropping the connection with the reply in it
    // would make the pending drain deliver those entries again (attempt 2 for events that had never run).
    expect(logger.lines.filter((l) => l.msg.includes('watchdog'))).toEqual([]);
    expect(seen).toEqual(orders(10).map((o) => `${o.seq}@1`));
  });
});

describe('redis-streams consumer: acks sent with the next read (Redis#stream, an ioredis internal)', () => {
  it('this ioredis gives a connected standalone client a socket that corks; a Cluster client has none (its acks go on the command connection)', async () => {
    const c = new Redis(r.server.url);
    try {
      await c.ping();
      // An ioredis upgrade that drops or renames `stream` fails here, not silently in the benchmarks.
      expect(corkable(c)).toBeDefined();
    } finally {
      c.disconnect();
    }
    expect(corkable(new Cluster([{ host: '127.0.0.1', port: r.server.port }], { lazyConnect: true }))).toBeUndefined();
  });

  it("a caught-up consumer's acks go on its read connection, in front of its next read", async () => {
    const prefix = uniquePrefix('ackwithread');
    const key = streamKey(prefix, 'order.created', 0);
    const b = await bus(prefix, recordingLogger());
    const monitor = await r.raw.monitor();
    r.cleanup.push(() => monitor.disconnect());
    const ackedFrom: string[] = [];
    monitor.on('monitor', (_time: string, args: string[], source: string) => {
      if (args[0]?.toLowerCase() === 'xack' && args[1] === key) ackedFrom.push(source);
    });
    let handled = 0;
    // Synchronous: done while the loop still holds the reply, so its ack is waiting when the next read goes out.
    await b.subscribe('order.created', { group: 'g', blockMs: 10_000, minIdleMs: 60_000 }, () => void handled++);
    for (let seq = 0; seq < 3; seq++) {
      await b.publish('order.created', order(seq));
      await waitFor(() => ackedFrom.length === seq + 1, 5000, `the ack of seq ${seq}`);
    }
    expect(handled).toBe(3);
    const addr = (await readConnection(r.raw))!['addr'];
    expect(ackedFrom).toEqual([addr, addr, addr]);
  });
});

describe('redis-streams consumer: a read whose reply is lost with its connection', () => {
  it('delivers what Redis handed to the lost read after the reconnect, from its own pending list, not after minIdleMs', async () => {
    const prefix = uniquePrefix('lostreply');
    const key = streamKey(prefix, 'order.created', 0);
    const logger = recordingLogger();
    const b = await bus(prefix, logger);
    const seen: string[] = [];
    await b.subscribe('order.created', { group: 'g', consumer: 'c', blockMs: 1000, minIdleMs: 60_000 }, (e, ctx) => {
      seen.push(`${e.data.seq}@${ctx.attempt}`);
    });
    await loseServedRead(r.raw, key, 7, 'c');
    // ioredis reconnects and sends the read again ('>': new entries only); once it returns (blockMs), the reader
    // drains its own pending list, so seq 7 does not wait there for the reclaim, minIdleMs (60 s) later.
    await waitFor(() => seen.length === 1, 5000, 'seq 7 after the reconnect');
    expect(seen).toEqual(['7@2']);
    await waitFor(async () => ((await r.raw.xpending(key, 'g')) as [number])[0] === 0, 5000, 'seq 7 acked');
  });
});
