/**
 * Randomized fault injection ("chaos") against a real redis-server with AOF (`appendfsync always`): the
 * end-to-end check of the redis-streams transport's at-least-once promise.
 *
 * Three publisher buses (two with batch entries, one with per-event entries) publish a few thousand
 * `order.created` events for ~16 s, single publishes several at once (which the batcher may put in one entry)
 * and publishMany calls, some keyed over 16 keys (4 partitions), recording which calls resolved and which
 * rejected. Four consumers of group `g` handle them: two buses in this process and two child processes
 * (fixtures/redis-chaos-consumer.ts), whose handlers fail (retryable) a planned number of times per event
 * (fixtures/redis-chaos-policy.ts: at most 3, maxDeliveries 100). Meanwhile, on a schedule drawn from the seed:
 * CLIENT KILL of read, publish and command connections, SIGSTOP/SIGCONT of the server for less than
 * commandTimeoutMs (past the read watchdog, sometimes), SIGKILL of a child consumer (a new one, under a new
 * name, replaces it), SIGSTOP of a child consumer past minIdleMs (then SIGCONT), a graceful close and new
 * subscription of an in-process consumer under the same name, and one server crash (SIGKILL), down for up to
 * 4 s (past commandTimeoutMs: publishes reject), restarted on the same port and AOF dir. Some handler runs
 * take 1.5 s, past minIdleMs.
 *
 * Verdict, once everything is quiet:
 *  - every event whose publish resolved is stored (what AOF with appendfsync always promises: Redis writes
 *    the AOF before it replies, and a SIGKILL of the process loses nothing written);
 *  - every stored event was handled successfully at least once: those whose publish resolved, and those
 *    whose publish rejected but that were stored anyway (a rejected publish may or may not have been
 *    stored: a connection killed or a server stalled past commandTimeoutMs after the XADD was sent leaves
 *    it unknown; what is stored must be delivered like the rest). Duplicates are allowed and counted;
 *  - nothing was dead-lettered, and the group has no pending entries left, on any stream.
 *
 * The seed is printed; `EVENTLANE_CHAOS_SEED=<n>` replays the same schedule, failures and publish pattern
 * (timing still varies from run to run). A failure prints the seed and the missing events with where they
 * are stored and who holds them.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { Redis } from 'ioredis';
import { describe, expect, it } from 'vitest';
import { createEventBus, EventlaneError, type EventBus, type Subscription } from '../../src/index.js';
import { uniquePrefix } from '../helpers/redis-server.js';
import { sleep, TIMED_OUT, within } from '../helpers/wait.js';
import { decodeEntry, retryKey, streamKey, type RedisStreamsTransport } from '../../transports/redis-streams/index.js';
import { perTestResources } from './fault-harness.js';
import { events, order, recordingLogger } from './redis-common.js';
import { chaosHandler, chaosSubscribe, chaosTransport, mix } from './fixtures/redis-chaos-policy.js';
import { prng } from '../helpers/prng.js';

const { cleanup, server, bus } = perTestResources();

const SEED = process.env['EVENTLANE_CHAOS_SEED'] ? Number(process.env['EVENTLANE_CHAOS_SEED']) >>> 0 : Math.floor(Math.random() * 2 ** 32) >>> 0;
const PARTITIONS = chaosTransport.partitions;
const TYPE = 'order.created';
/** How long publishers publish and faults are injected. */
const CHAOS_MS = 16_000;
const VERBOSE = process.env['EVENTLANE_CHAOS_VERBOSE'] === '1';
const FIXTURE = fileURLToPath(new URL('./fixtures/redis-chaos-consumer.ts', import.meta.url));

type Op = 'kill-read' | 'kill-publish' | 'kill-command' | 'pause' | 'kill-child' | 'stall-child' | 'resubscribe' | 'restart';

/**
 * The fault schedule: an op every 300-1200 ms, one server restart between 30% and 70% of the window, at most
 * 3 child kills.
 */
function schedule(rand: () => number): { at: number; op: Op; arg: number }[] {
  const out: { at: number; op: Op; arg: number }[] = [];
  const restartAt = CHAOS_MS * (0.3 + 0.4 * rand());
  let restarted = false;
  let childKills = 0;
  for (let at = 500 + rand() * 500; at < CHAOS_MS - 500; at += 300 + rand() * 900) {
    if (!restarted && at >= restartAt) {
      out.push({ at, op: 'restart', arg: rand() });
      restarted = true;
      continue;
    }
    const r = rand();
    let op: Op = r < 0.25 ? 'kill-read' : r < 0.45 ? 'kill-publish' : r < 0.55 ? 'kill-command' : r < 0.72 ? 'pause' : r < 0.85 ? 'kill-child' : r < 0.93 ? 'stall-child' : 'resubscribe';
    if (op === 'kill-child' && ++childKills > 3) op = 'kill-read';
    out.push({ at, op, arg: rand() });
  }
  return out;
}

interface ChildConsumer {
  name: string;
  proc: ChildProcess;
  /** True once it prints `ready`; false if it exits first. */
  ready: Promise<boolean>;
}

function alive(c: ChildConsumer): boolean {
  return c.proc.exitCode === null && c.proc.signalCode === null;
}

describe('redis-streams: chaos', () => {
  it('no event whose publish resolved is lost through connection kills, server stalls, a server crash and consumer crashes', async () => {
    const started = Date.now();
    console.log(`redis-chaos: seed ${SEED} (EVENTLANE_CHAOS_SEED=${SEED} to replay)`);
    const s = await server({ aof: true });
    cleanup.push(() => s.resume());
    const prefix = uniquePrefix('chaos');
    const url = s.url;

    // ------------------------------------------------------------ what happened
    const handled = new Map<number, number>(); // seq -> successful handler runs
    const handledBy = new Map<string, number>();
    const logs: string[] = [];
    const ok =
      (who: string) =>
      (seq: number): void => {
        handled.set(seq, (handled.get(seq) ?? 0) + 1);
        handledBy.set(who, (handledBy.get(who) ?? 0) + 1);
      };
    const resolved = new Set<number>();
    const rejected = new Set<number>();
    const rejections: Record<string, number> = {};
    const done: string[] = [];
    /** Steps that did not finish in time (a consumer's close(), say), and child consumers that died unbidden. */
    const hangs: string[] = [];

    // ------------------------------------------------------------ consumers
    const children: ChildConsumer[] = [];
    let childSeq = 0;
    const spawnChild = (): ChildConsumer => {
      const name = `child-${childSeq++}`;
      // stdin: a pipe the child watches, so it dies with this process (an aborted run).
      const proc = spawn(process.execPath, ['--import', 'tsx', FIXTURE, url, prefix, String(SEED), name], { stdio: ['pipe', 'pipe', 'inherit'] });
      cleanup.push(() => {
        if (proc.exitCode === null && proc.signalCode === null) proc.kill('SIGKILL');
      });
      const record = ok(name);
      let buf = '';
      let isReady!: (ok: boolean) => void;
      const ready = new Promise<boolean>((r) => (isReady = r));
      proc.once('exit', (code, signal) => {
        isReady(false);
        // SIGKILL is the test's (a kill-child op, or the cleanup); anything else is the consumer's own doing.
        if (signal !== 'SIGKILL') hangs.push(`${name} exited by itself (code ${code}, signal ${signal})`);
      });
      proc.stdout!.on('data', (d: Buffer) => {
        buf += d.toString();
        let nl: number;
        while ((nl = buf.indexOf('\n')) >= 0) {
          const line = buf.slice(0, nl);
          buf = buf.slice(nl + 1);
          if (line.startsWith('ok ')) record(Number(line.split(' ')[1]));
          else if (line === 'ready') isReady(true);
          else if (line.startsWith('log ')) logs.push(`${((Date.now() - started) / 1000).toFixed(1)}s ${line}`);
        }
      });
      const c = { name, proc, ready };
      children.push(c);
      return c;
    };
    const first = [spawnChild(), spawnChild()];
    const logger = recordingLogger();
    const inProcess: { name: string; bus: EventBus<typeof events>; sub: Subscription }[] = [];
    for (const name of ['in-0', 'in-1']) {
      const b = await createEventBus({ service: 'chaos', events, logger, transport: { type: 'redis-streams', url, prefix, ...chaosTransport } });
      cleanup.push(() => within(b.close(), 20_000));
      inProcess.push({ name, bus: b, sub: await b.subscribe(TYPE, { ...chaosSubscribe, consumer: name }, chaosHandler(SEED, ok(name))) });
    }
    expect(await within(Promise.all(first.map((c) => c.ready)), 30_000), 'child consumers ready').toEqual([true, true]);

    // ------------------------------------------------------------ publishers
    const pubs = [
      await bus(url, { ...chaosTransport, entryMode: 'batch' }, prefix),
      await bus(url, { ...chaosTransport, entryMode: 'batch' }, prefix),
      await bus(url, { ...chaosTransport, entryMode: 'event' }, prefix),
    ];
    let publishing = true;
    const track = (seqs: number[], p: Promise<void>): Promise<void> =>
      p.then(
        () => seqs.forEach((q) => resolved.add(q)),
        (err: unknown) => {
          const code = err instanceof EventlaneError ? err.code : `untyped ${String(err)}`;
          rejections[code] = (rejections[code] ?? 0) + 1;
          seqs.forEach((q) => rejected.add(q));
        },
      );
    const publisher = async (b: EventBus<typeof events>, p: number): Promise<void> => {
      const rand = prng(mix(SEED, 100 + p));
      const outstanding: Promise<void>[] = [];
      let n = 0;
      while (publishing) {
        const keyed = rand() < 0.6;
        const key = (): string => `k${Math.floor(rand() * 16)}`;
        const base = (p + 1) * 1_000_000 + n;
        if (rand() < 0.5) {
          // Several single publishes at once: the batcher may write them as one entry.
          const k = 1 + Math.floor(rand() * 5);
          for (let i = 0; i < k; i++) outstanding.push(track([base + i], b.publish(TYPE, order(base + i), keyed ? { key: key() } : undefined)));
          n += k;
        } else {
          const k = 2 + Math.floor(rand() * 30);
          const seqs = Array.from({ length: k }, (_, i) => base + i);
          const keys = keyed ? seqs.map(() => key()) : undefined;
          outstanding.push(track(seqs, b.publishMany(TYPE, seqs.map(order), keys ? { key: (_, i) => keys[i]! } : undefined)));
          n += k;
        }
        await sleep(50 + Math.floor(rand() * 100));
      }
      await Promise.all(outstanding);
    };

    // ------------------------------------------------------------ faults
    const admin = new Redis(url, { commandTimeout: 1500, maxRetriesPerRequest: 1, connectionName: 'chaos-admin' });
    admin.on('error', () => undefined);
    cleanup.push(() => admin.disconnect());
    const killConnections = async (role: string, arg: number): Promise<string> => {
      const ids = String(await admin.client('LIST'))
        .split('\n')
        .filter((l) => l.includes(`name=eventlane:${role}`))
        .map((l) => /id=(\d+)/.exec(l)![1]!);
      // A third of the time all of them; else one.
      const victims = arg < 0.33 ? ids : ids.slice(Math.floor(arg * 1000) % Math.max(1, ids.length)).slice(0, 1);
      for (const id of victims) await admin.client('KILL', 'ID', id).catch(() => undefined);
      return `${victims.length}/${ids.length}`;
    };
    // The step of the running fault that is awaited now, for a hang's message (a resubscribe: its close() or its subscribe()).
    let step = '';
    const run = async (op: Op, arg: number): Promise<string> => {
      step = '';
      switch (op) {
        case 'kill-read':
          return killConnections('read:', arg);
        case 'kill-publish':
          return killConnections('publish:', arg);
        case 'kill-command':
          return killConnections('command:', arg);
        case 'pause': {
          const ms = Math.round(200 + arg * 1300); // < commandTimeoutMs; past blockMs + the watchdog's commandTimeoutMs / 2 above 1200
          s.pause();
          await sleep(ms);
          s.resume();
          return `${ms} ms`;
        }
        case 'kill-child': {
          const live = children.filter(alive);
          const victim = live[Math.floor(arg * live.length)];
          if (victim === undefined) return 'none alive';
          const exited = new Promise((r) => victim.proc.once('exit', r));
          victim.proc.kill('SIGKILL');
          await exited;
          const next = spawnChild(); // ready in the background
          return `${victim.name} -> ${next.name}`;
        }
        case 'stall-child': {
          // Stopped past minIdleMs: the others reclaim what it holds; resumed, it must leave those to them.
          const live = children.filter(alive);
          const victim = live[Math.floor(arg * live.length)];
          if (victim === undefined) return 'none alive';
          const ms = Math.round(1200 + arg * 1300);
          victim.proc.kill('SIGSTOP');
          await sleep(ms);
          victim.proc.kill('SIGCONT');
          return `${victim.name} ${ms} ms`;
        }
        case 'resubscribe': {
          // A graceful close (handlers finish, acks flushed) and a new subscription under the same name; half the
          // time just after this process's read connections were killed (closed while they wait to reconnect).
          const c = inProcess[Math.floor(arg * inProcess.length)]!;
          const killed = arg < 0.5 ? await killConnections(`read:${process.pid}:`, 0) : 'none';
          if (arg < 0.5) await sleep(5);
          step = `${c.name}: close()`;
          await c.sub.close();
          step = `${c.name}: subscribe()`;
          c.sub = await c.bus.subscribe(TYPE, { ...chaosSubscribe, consumer: c.name }, chaosHandler(SEED, ok(c.name)));
          return `${c.name} (reads killed before: ${killed})`;
        }
        case 'restart': {
          await s.crash();
          const down = Math.round(arg * 4000); // past commandTimeoutMs, sometimes: publishes reject
          await sleep(down);
          await s.restart();
          return `down ${down} ms + restart`;
        }
      }
    };
    const plan = schedule(prng(mix(SEED, 7)));
    const chaos = (async () => {
      const t0 = Date.now();
      for (const { at, op, arg } of plan) {
        const wait = t0 + at - Date.now();
        if (wait > 0) await sleep(wait);
        if (VERBOSE) console.log(`redis-chaos: ${((Date.now() - t0) / 1000).toFixed(1)}s ${op} starts`);
        const settled = await within(
          run(op, arg).catch((err: unknown) => `failed: ${String(err)}`),
          20_000,
        );
        const what = settled === TIMED_OUT ? 'HUNG' : settled;
        if (what === 'HUNG') hangs.push(`${op} did not finish in 20 s${step ? ` (hung in ${step})` : ''}`);
        done.push(`${((Date.now() - t0) / 1000).toFixed(1)}s ${op} ${what}`);
        if (VERBOSE) console.log(`redis-chaos: ${done[done.length - 1]}`);
      }
      const rest = t0 + CHAOS_MS - Date.now();
      if (rest > 0) await sleep(rest);
    })();
    const publishers = pubs.map((b, p) => publisher(b, p));
    await chaos;
    publishing = false;
    // Every publish settles within commandTimeoutMs (the time waiting for a connection included).
    if ((await within(Promise.all(publishers), 3 * chaosTransport.commandTimeoutMs)) === TIMED_OUT) hangs.push('publishes still unsettled 9 s after publishing stopped');
    if (!s.alive) await s.restart();
    s.resume();
    // A replacement started late, or during the restart, is given the time to connect.
    if ((await within(Promise.all(children.filter(alive).map((c) => c.ready)), 30_000)) === TIMED_OUT) hangs.push('a child consumer not ready in 30 s');
    const publishedAt = Date.now();

    // ------------------------------------------------------------ what is stored
    const stored = new Map<number, { key: string; entryId: string; eventId: string }>();
    const malformed: string[] = [];
    for (let p = 0; p < PARTITIONS; p++) {
      const key = streamKey(prefix, TYPE, p);
      for (const [entryId, fields] of (await admin.xrange(key, '-', '+')) as [string, string[]][]) {
        const d = decodeEntry(entryId, fields, TYPE);
        if (!('events' in d)) {
          malformed.push(`${key} ${entryId}: ${d.reason}`);
          continue;
        }
        for (const ev of d.events) stored.set((ev.data as { seq: number }).seq, { key, entryId, eventId: ev.id });
      }
    }
    const notStored = [...resolved].filter((q) => !stored.has(q));
    const unhandled = (): number[] => [...stored.keys()].filter((q) => !handled.has(q));

    // ------------------------------------------------------------ quiesce
    const streams = Array.from({ length: PARTITIONS }, (_, p) => [streamKey(prefix, TYPE, p), retryKey(prefix, TYPE, p, 'g')]).flat();
    const pendingCount = async (): Promise<number> => {
      let n = 0;
      for (const k of streams) n += Number(((await admin.xpending(k, 'g')) as [number])[0]);
      return n;
    };
    let missing = unhandled();
    for (const until = Date.now() + 30_000; missing.length > 0 && Date.now() < until; missing = unhandled()) await sleep(100);
    let pending = await pendingCount();
    for (const until = Date.now() + 15_000; pending > 0 && Date.now() < until; pending = await pendingCount()) await sleep(100);
    const dead = await (pubs[0]!.transport as RedisStreamsTransport).deadLetters(TYPE, 'g');

    // ------------------------------------------------------------ report
    let duplicates = 0;
    for (const n of handled.values()) duplicates += n - 1;
    const rejectedStored = [...rejected].filter((q) => stored.has(q)).length;
    console.log(
      [
        `redis-chaos: seed ${SEED}: ${resolved.size + rejected.size} published, ${resolved.size} resolved, ${rejected.size} rejected (calls by code: ${JSON.stringify(rejections)}; ${rejectedStored} of the events stored anyway)`,
        `  ${stored.size} stored, ${handled.size} handled, ${duplicates} duplicate runs; by consumer ${JSON.stringify(Object.fromEntries(handledBy))}`,
        `  quiet ${((Date.now() - publishedAt) / 1000).toFixed(1)} s after publishing ended; total ${((Date.now() - started) / 1000).toFixed(1)} s`,
        `  faults: ${done.join('; ')}`,
      ].join('\n'),
    );
    const failures: string[] = [...hangs];
    if (notStored.length > 0) failures.push(`${notStored.length} events whose publish resolved are not stored (lost by Redis: AOF?): ${notStored.slice(0, 50).join(' ')}`);
    if (malformed.length > 0) failures.push(`malformed entries: ${malformed.slice(0, 10).join('; ')}`);
    if (missing.length > 0) {
      const lines: string[] = [];
      for (const q of missing.slice(0, 30)) {
        const at = stored.get(q)!;
        const pel = (await admin.xpending(at.key, 'g', at.entryId, at.entryId, 1)) as [string, string, number, number][];
        const retried = (await admin.xrange(retryKey(prefix, TYPE, Number(at.key.slice(at.key.lastIndexOf(':') + 1, -1)), 'g'), '-', '+')).filter(([, f]) => f.includes(at.eventId));
        const holder = pel[0] ? `pending on ${pel[0][1]} (idle ${pel[0][2]} ms, ${pel[0][3]} deliveries)` : 'not pending';
        const retries = retried.length > 0 ? `; in the retry stream as ${retried.map(([id]) => id).join(' ')}` : '';
        lines.push(`  seq ${q} event ${at.eventId} (publish ${resolved.has(q) ? 'resolved' : 'rejected'}), entry ${at.key} ${at.entryId}: ${holder}${retries}`);
      }
      failures.push(`${missing.length} stored events never handled (seed ${SEED}):\n${lines.join('\n')}`);
    }
    if (missing.length > 0) {
      const groups = await Promise.all(streams.map(async (k) => `${k.slice(prefix.length + 1)} ${JSON.stringify(await admin.xinfo('GROUPS', k))}`));
      failures.push(`groups: ${groups.join('; ')}`);
    }
    if (pending > 0) failures.push(`${pending} entries still pending in group g`);
    if (dead.length > 0)
      failures.push(
        `${dead.length} dead letters: ${dead
          .slice(0, 10)
          .map((d) => `${d.event?.id} ${d.error} (${d.attempts} attempts)`)
          .join('; ')}`,
      );
    if (failures.length > 0) {
      const warnings = [...logger.lines.filter((l) => l.level !== 'debug' && l.level !== 'info').map((l) => `${l.level} ${l.msg} ${JSON.stringify(l.obj)}`), ...logs];
      console.log(`redis-chaos: FAILED, seed ${SEED}\n${failures.join('\n')}\n  consumer warnings (last 40):\n    ${warnings.slice(-40).join('\n    ')}`);
    }
    expect(failures, `seed ${SEED}`).toEqual([]);
    expect(resolved.size).toBeGreaterThan(1000);
  }, 120_000);
});
