/**
 * Faults of consumers against real redis-server processes: a consumer killed with SIGKILL, restarted under its
 * name, killed by an event in a crash loop, stalled (SIGSTOP) past minIdleMs; idle consumers pruned.
 */
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { Redis } from 'ioredis';
import { uniquePrefix } from '../helpers/redis-server.js';
import { sleep, waitFor } from '../helpers/wait.js';
import { streamKey, type RedisStreamsTransport } from '../../transports/redis-streams/index.js';
import { perTestResources } from './fault-harness.js';
import { orders } from './redis-common.js';

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
