/**
 * Consumers SIGKILLed one after another while a backlog is pending, against a real redis-server and real
 * consumer processes: a consumer's death must charge a delivery (towards `maxDeliveries`) only to the entries
 * it could have started, not to its whole read-ahead, and an entry it reclaimed must not wait behind that
 * read-ahead.
 *
 * Rounds: each writes a fresh backlog (per-event entries, and batch entries in the first round), subscribes a
 * `slow` consumer (fixtures/redis-backlog-consumer.ts: default `prefetch` (and so read and claim sizes) and
 * `maxDeliveries`; concurrency 1, handlers of ~20 ms) and kills it with SIGKILL 1.2-1.6 s later (drawn from the
 * seed), after it has read the backlog and reclaimed what the one before it held. Then `fast` consumers take
 * over. No handler fails or crashes, so a delivery counted against `maxDeliveries` is one a consumer died with,
 * and the few events running when one was killed cannot add up to `maxDeliveries`.
 *
 * Verdict: every event handled at least once, nothing dead-lettered, nothing left pending. A dead letter ends
 * the test at once (between rounds, or while the fast consumers work). The seed is printed;
 * `EVENTLANE_CHAOS_SEED=<n>` replays the same kill times and handler times.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { Redis } from 'ioredis';
import { describe, expect, it } from 'vitest';
import { uniquePrefix } from '../helpers/redis-server.js';
import { prng } from '../helpers/prng.js';
import { sleep, TIMED_OUT, waitFor, within } from '../helpers/wait.js';
import { dlqKey, retryKey, streamKey, type RedisStreamsTransport } from '../../transports/redis-streams/index.js';
import { perTestResources } from './fault-harness.js';
import { order } from './redis-common.js';
import { mix } from './fixtures/redis-chaos-policy.js';

const { cleanup, server, bus } = perTestResources();

const SEED = process.env['EVENTLANE_CHAOS_SEED'] ? Number(process.env['EVENTLANE_CHAOS_SEED']) >>> 0 : Math.floor(Math.random() * 2 ** 32) >>> 0;
const TYPE = 'order.created';
const FIXTURE = fileURLToPath(new URL('./fixtures/redis-backlog-consumer.ts', import.meta.url));
/** Slow consumers killed in turn (one more than the default `maxDeliveries`), and per-event entries each round writes. */
const ROUNDS = 6;
const PER_ROUND = 1000;
/** Events of the batch entries the first round writes too (entries of 50). */
const BATCHED = 1000;

interface Child {
  name: string;
  proc: ChildProcess;
  loaded: Promise<void>;
  ready: Promise<void>;
}

/** Starts a consumer process, loaded but not subscribed (`go` subscribes it); `handled` counts successful runs per seq. */
function startChild(url: string, prefix: string, name: string, mode: 'slow' | 'fast', handled: Map<number, number>, exits: string[]): Child {
  const proc = spawn(process.execPath, ['--import', 'tsx', FIXTURE, url, prefix, String(SEED), name, mode], { stdio: ['pipe', 'pipe', 'inherit'] });
  cleanup.push(() => {
    if (proc.exitCode === null && proc.signalCode === null) proc.kill('SIGKILL');
  });
  proc.once('exit', (code, signal) => {
    if (signal !== 'SIGKILL') exits.push(`${name} exited by itself (code ${code}, signal ${signal})`);
  });
  let loaded!: () => void;
  let ready!: () => void;
  const c: Child = { name, proc, loaded: new Promise((r) => (loaded = r)), ready: new Promise((r) => (ready = r)) };
  let buf = '';
  proc.stdout!.on('data', (d: Buffer) => {
    buf += d.toString();
    for (let nl = buf.indexOf('\n'); nl >= 0; nl = buf.indexOf('\n')) {
      const line = buf.slice(0, nl);
      buf = buf.slice(nl + 1);
      if (line.startsWith('ok ')) {
        const q = Number(line.split(' ')[1]);
        handled.set(q, (handled.get(q) ?? 0) + 1);
      } else if (line === 'loaded') loaded();
      else if (line === 'ready') ready();
    }
  });
  return c;
}

async function kill(c: Child): Promise<void> {
  const exited = new Promise((r) => c.proc.once('exit', r));
  c.proc.kill('SIGKILL');
  await exited;
}

describe('redis-streams: chaos over a backlog', () => {
  it('consumers SIGKILLed in turn while a backlog is pending: nothing dead-lettered, nothing lost, nothing left pending', async () => {
    const started = Date.now();
    console.log(`redis-chaos-backlog: seed ${SEED} (EVENTLANE_CHAOS_SEED=${SEED} to replay)`);
    const s = await server();
    const prefix = uniquePrefix('backlog');
    const pubEvent = await bus(s.url, { entryMode: 'event', partitions: 1 }, prefix);
    const pubBatch = await bus(s.url, { entryMode: 'batch', partitions: 1 }, prefix);
    const handled = new Map<number, number>();
    const exits: string[] = [];
    const slow = Array.from({ length: ROUNDS }, (_, i) => startChild(s.url, prefix, `slow-${i}`, 'slow', handled, exits));
    const fast = [0, 1].map((i) => startChild(s.url, prefix, `fast-${i}`, 'fast', handled, exits));
    expect(await within(Promise.all([...slow, ...fast].map((c) => c.loaded)), 90_000), 'consumers loaded').not.toBe(TIMED_OUT);

    const admin = new Redis(s.url, { maxRetriesPerRequest: 1 });
    cleanup.push(() => admin.disconnect());
    const anyDead = async (): Promise<boolean> => (await admin.xlen(dlqKey(prefix, TYPE, 0))) > 0;
    const rand = prng(mix(SEED, 11));
    let total = 0;
    const rounds: string[] = [];
    for (const c of slow) {
      await pubEvent.publishMany(
        TYPE,
        Array.from({ length: PER_ROUND }, (_, i) => order(total + i)),
      );
      total += PER_ROUND;
      if (c === slow[0]) {
        for (let n = 0; n < BATCHED; n += 50)
          await pubBatch.publishMany(
            TYPE,
            Array.from({ length: 50 }, (_, i) => order(total + n + i)),
          );
        total += BATCHED;
      }
      c.proc.stdin!.write('go\n');
      await c.ready;
      const ms = Math.round(1200 + rand() * 400);
      await sleep(ms);
      await kill(c);
      rounds.push(`${c.name} killed ${ms} ms after subscribing`);
      if (await anyDead()) break;
    }
    const killedAt = Date.now();
    for (const c of fast) c.proc.stdin!.write('go\n');

    const pendingCount = async (): Promise<number> => {
      let n = 0;
      for (const k of [streamKey(prefix, TYPE, 0), retryKey(prefix, TYPE, 0, 'g')]) n += Number(((await admin.xpending(k, 'g')) as [number])[0]);
      return n;
    };
    let polled = 0;
    const doneOrDead = async (): Promise<boolean> => handled.size === total || (++polled % 20 === 0 && (await anyDead()));
    await waitFor(doneOrDead, 40_000, 'every event handled').catch(() => undefined);
    let pending = await pendingCount();
    for (const until = Date.now() + 10_000; pending > 0 && Date.now() < until && !(await anyDead()); pending = await pendingCount()) await sleep(100);
    const dead = await (pubEvent.transport as RedisStreamsTransport).deadLetters(TYPE, 'g');
    await Promise.all(fast.map(kill));

    let duplicates = 0;
    for (const n of handled.values()) duplicates += n - 1;
    console.log(
      [
        `redis-chaos-backlog: seed ${SEED}: ${total} events, ${handled.size} handled, ${duplicates} duplicate runs, ${dead.length} dead-lettered, ${pending} pending`,
        `  ${rounds.join('; ')}`,
        `  consumed ${((Date.now() - killedAt) / 1000).toFixed(1)} s after the last kill; total ${((Date.now() - started) / 1000).toFixed(1)} s`,
      ].join('\n'),
    );
    expect(exits, `seed ${SEED}`).toEqual([]);
    const letters = dead.map((d) => `seq ${(d.event?.data as { seq: number } | undefined)?.seq}: ${d.error} (${d.attempts} attempts)`);
    expect(letters, `seed ${SEED}: dead letters`).toEqual([]);
    expect(total - handled.size, `seed ${SEED}: events never handled`).toBe(0);
    expect(pending, `seed ${SEED}: entries left pending`).toBe(0);
  }, 180_000);
});
