/** Shared bits of the Redis integration tests. */
import { Redis } from 'ioredis';
import { afterAll, afterEach, beforeAll, expect } from 'vitest';
import { z } from 'zod';
import { createEventBus, defineEvents, EventlaneError, type EventBus, type Logger } from '../../src/index.js';
import { RedisServer, uniquePrefix } from '../helpers/redis-server.js';
import { sleep, waitFor } from '../helpers/wait.js';

export const events = defineEvents({
  'order.created': z.object({ orderId: z.string(), amount: z.number(), seq: z.number().int() }),
  'audit.logged': z.object({ line: z.string() }),
});

export const fastRetry = { retry: { backoff: { initialMs: 10, maxMs: 50 } } };
export const fastRead = { blockMs: 200, minIdleMs: 1000 };

export function orders(n: number, from = 0): { orderId: string; amount: number; seq: number }[] {
  return Array.from({ length: n }, (_, i) => order(from + i));
}

export async function makeBus(url: string, extra: Record<string, unknown> = {}, prefix = uniquePrefix('it')) {
  return createEventBus({ service: 'it', events, transport: { type: 'redis-streams', url, prefix, partitions: 2, ...extra } });
}

export function order(seq: number): { orderId: string; amount: number; seq: number } {
  return { orderId: `o-${seq}`, amount: seq, seq };
}

/**
 * Publishes one `order.created` every 5 ms while `during` runs (a failover, say), keyed by `keyOf` if given.
 * Returns each publish's outcome ('ok' or the error's code; anything untyped is named as such), the seqs
 * that resolved, and how long each of those took (ms).
 */
export async function publishThrough(
  b: EventBus<typeof events>,
  from: number,
  during: () => Promise<unknown>,
  keyOf?: (seq: number) => string,
): Promise<{ tally: Record<string, number>; accepted: number[]; next: number; tookMs: Map<number, number> }> {
  let seq = from;
  let stop = false;
  const outcomes: Promise<string>[] = [];
  const accepted: number[] = [];
  const tookMs = new Map<number, number>();
  const loop = (async () => {
    while (!stop) {
      const s = seq++;
      const t0 = performance.now();
      outcomes.push(
        b.publish('order.created', order(s), keyOf === undefined ? undefined : { key: keyOf(s) }).then(
          () => {
            accepted.push(s);
            tookMs.set(s, performance.now() - t0);
            return 'ok';
          },
          (err: unknown) => (err instanceof EventlaneError ? err.code : `untyped: ${String(err)}`),
        ),
      );
      await sleep(5);
    }
  })();
  try {
    await during();
  } finally {
    stop = true;
    await loop;
  }
  const tally: Record<string, number> = {};
  for (const r of await Promise.all(outcomes)) tally[r] = (tally[r] ?? 0) + 1;
  return { tally, accepted, next: seq, tookMs };
}

/** A logger that keeps its warnings (fields and message) and drops the rest. */
export function warningLogger(): Logger & { warnings: { obj: Record<string, unknown>; msg?: string }[] } {
  const warnings: { obj: Record<string, unknown>; msg?: string }[] = [];
  const drop = (): void => undefined;
  return { warnings, debug: drop, info: drop, error: drop, warn: (obj: object, msg?: string) => void warnings.push({ obj: obj as Record<string, unknown>, msg }) };
}

/** A logger that keeps every line with its level (`messages`: the lines' messages alone). */
export function recordingLogger(): Logger & { lines: { level: 'debug' | 'info' | 'warn' | 'error'; obj: Record<string, unknown>; msg: string }[]; readonly messages: string[] } {
  const lines: { level: 'debug' | 'info' | 'warn' | 'error'; obj: Record<string, unknown>; msg: string }[] = [];
  const at =
    (level: 'debug' | 'info' | 'warn' | 'error') =>
    (obj: object, msg?: string): void =>
      void lines.push({ level, obj: obj as Record<string, unknown>, msg: msg ?? '' });
  return {
    lines,
    get messages() {
      return lines.map((l) => l.msg);
    },
    debug: at('debug'),
    info: at('info'),
    warn: at('warn'),
    error: at('error'),
  };
}

/** What `redisForFile` gives a test file: set in its beforeAll, so read the fields inside tests. */
export interface FileRedis<S extends { url: string; stop(): Promise<void> }> {
  server: S;
  raw: Redis;
  /** Run after each test, newest first; a failing one does not stop the others. */
  cleanup: (() => unknown)[];
}

/**
 * The Redis of a test file: a redis-server of its own (or REDIS_URL's, with `external`), a plain client on it,
 * and cleanups run after each test. Registers the file's hooks.
 */
export function redisForFile(): FileRedis<RedisServer>;
export function redisForFile(opts: { external: true }): FileRedis<{ url: string; stop(): Promise<void> }>;
export function redisForFile(opts: { external?: boolean } = {}): FileRedis<{ url: string; stop(): Promise<void> }> {
  const ctx = { cleanup: [] } as unknown as FileRedis<{ url: string; stop(): Promise<void> }>;
  beforeAll(async () => {
    ctx.server = opts.external ? await RedisServer.startOrExternal() : await RedisServer.start();
    ctx.raw = new Redis(ctx.server.url);
  });
  afterEach(async () => {
    for (const f of ctx.cleanup.splice(0).reverse()) await Promise.resolve(f()).catch(() => undefined);
  });
  afterAll(async () => {
    ctx.raw?.disconnect();
    await ctx.server?.stop();
  });
  return ctx;
}

/** CLIENT LIST fields of the one consumer read connection on the server `c` talks to (each test closes its bus before the next). */
export async function readConnection(c: Redis): Promise<Record<string, string> | undefined> {
  const line = String(await c.client('LIST'))
    .split('\n')
    .find((l) => l.includes('name=eventlane:read:'));
  return line === undefined
    ? undefined
    : Object.fromEntries(
        line
          .trim()
          .split(' ')
          .map((kv) => [kv.slice(0, kv.indexOf('=')), kv.slice(kv.indexOf('=') + 1)]),
      );
}

/** The client id of the read connection once it is blocked in XREADGROUP. */
export async function blockedReader(c: Redis): Promise<string> {
  let id: string | undefined;
  await waitFor(
    async () => {
      const r = await readConnection(c);
      id = r?.['cmd'] === 'xreadgroup' && r['flags']?.includes('b') ? r['id'] : undefined;
      return id !== undefined;
    },
    5000,
    'the reader to block in XREADGROUP',
  );
  return id!;
}

/**
 * Loses the reply of a blocked read that Redis served: one write (a pipeline, not MULTI: a transaction serves
 * blocked clients after EXEC) with an XADD of `order(seq)` to `key`, which Redis hands to the blocked XREADGROUP
 * (the entry goes to `consumer`'s pending list of group g, its reply to the client's output buffer), and a
 * CLIENT KILL that closes that client before the reply is written. `c` talks to the server holding `key`.
 */
export async function loseServedRead(c: Redis, key: string, seq: number, consumer: string): Promise<void> {
  const id = await blockedReader(c);
  const [added, killed] = (await c
    .pipeline()
    .xadd(key, '*', 'data', JSON.stringify(order(seq)))
    .call('CLIENT', 'KILL', 'ID', id)
    .exec())!;
  expect(added![0]).toBeNull();
  expect(killed![1]).toBe(1);
  const pending = (await c.xpending(key, 'g', '-', '+', 10)) as [string, string, number, number][];
  expect(pending.map((p) => [p[1], p[3]])).toEqual([[consumer, 1]]);
}
