/**
 * Delayed delivery on Redis through crashes: events scheduled with `deliverAt` (the payload's `amount` holds
 * the due time) by this process and by a child process that is SIGKILLed while it schedules, with Redis
 * (AOF, appendfsync always) SIGKILLed and restarted while they come due. Every event whose publish resolved is
 * delivered to both groups, none before its due time; each is moved to its stream once, though three
 * processes run movers; nothing is left scheduled. Handler runs of one event repeated by the consumers'
 * at-least-once recovery after the crash are allowed, and printed.
 */
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { Redis, Cluster } from 'ioredis';
import { describe, expect, it } from 'vitest';
import { createEventBus, type EventBus } from '../../src/index.js';
import { RedisCluster } from '../helpers/redis-cluster.js';
import { uniquePrefix } from '../helpers/redis-server.js';
import { sleep, waitFor } from '../helpers/wait.js';
import { perTestResources } from './fault-harness.js';
import { events } from './redis-common.js';

const { cleanup, server } = perTestResources();
const FIXTURE = fileURLToPath(new URL('./fixtures/redis-delayed-publisher.ts', import.meta.url));
const PARTITIONS = 4;
const LEAD_MS = 3000;
const SPREAD_MS = 10_000;

interface Scenario {
  block: Record<string, unknown>;
  /** Events this process schedules (the child schedules as many more, until it is killed). */
  count: number;
  crash: () => Promise<void>;
  /** A client of the server (or cluster) holding the keys. */
  client: () => Redis | Cluster;
}

async function bus(block: Record<string, unknown>, service: string): Promise<EventBus<typeof events>> {
  const b = await createEventBus({ service, events, transport: block as { type: 'redis-streams' }, logger: false });
  cleanup.push(() => b.close());
  return b;
}

/** Starts the child publisher; resolves with the seqs it reported resolved (read as they come) and its process. */
async function childPublisher(block: Record<string, unknown>, from: number, count: number) {
  const proc = spawn(process.execPath, ['--import', 'tsx', FIXTURE, JSON.stringify(block), String(from), String(count), String(LEAD_MS), String(SPREAD_MS)], { stdio: ['ignore', 'pipe', 'inherit'] });
  cleanup.push(() => void (proc.exitCode === null && proc.signalCode === null && proc.kill('SIGKILL')));
  const resolved: number[] = [];
  let buf = '';
  let ready = false;
  proc.stdout.on('data', (chunk: Buffer) => {
    buf += chunk.toString();
    const lines = buf.split('\n');
    buf = lines.pop()!;
    for (const line of lines) {
      if (line === 'ready') ready = true;
      const m = /^ok (\d+) (\d+)$/.exec(line);
      if (m) for (let i = 0; i < Number(m[2]); i++) resolved.push(Number(m[1]) + i);
    }
  });
  await waitFor(() => ready, 30_000, 'the child publisher');
  return { proc, resolved };
}

async function runScenario(s: Scenario): Promise<void> {
  const got = new Map<string, Map<number, number>>([
    ['g1', new Map()],
    ['g2', new Map()],
  ]);
  let early = 0;
  let duplicates = 0;
  const consumer = await bus(s.block, 'delayed-consumer');
  for (const [group, seen] of got) {
    await consumer.subscribe('order.created', { group, concurrency: 64, blockMs: 200, minIdleMs: 5000 }, (e) => {
      if (Date.now() < e.data.amount) early++;
      if (seen.has(e.data.seq)) duplicates++;
      seen.set(e.data.seq, Date.now() - e.data.amount);
    });
  }
  const producer = await bus(s.block, 'delayed-producer');
  // The child is given more than it can schedule before it is killed: killed at 1.5 s, or once it has resolved
  // half the test's count, so the kill always lands while it schedules however fast the machine is.
  const child = await childPublisher(s.block, 1_000_000, 10 * s.count);
  const start = Date.now();
  const killed = new Promise((r) => child.proc.once('exit', r));
  const killer = setInterval(() => {
    if (Date.now() - start >= 1500 || child.resolved.length >= s.count / 2) child.proc.kill('SIGKILL');
  }, 10);
  const resolved: number[] = [];
  for (let seq = 0; seq < s.count; seq += 500) {
    const deliverAt = start + LEAD_MS + Math.floor((seq / s.count) * SPREAD_MS);
    const batch = Array.from({ length: 500 }, (_, i) => ({ orderId: `o-${seq + i}`, amount: deliverAt, seq: seq + i }));
    await producer.publishMany('order.created', batch, { deliverAt });
    for (const o of batch) resolved.push(o.seq);
  }
  await killed;
  clearInterval(killer);
  expect(child.proc.signalCode).toBe('SIGKILL');
  // Mid-way through the due times (unless scheduling took that long): a crash and a restart of the server holding them.
  await sleep(Math.max(0, start + LEAD_MS + SPREAD_MS / 2 - Date.now()));
  await s.crash();
  const all = [...resolved, ...child.resolved];
  expect(child.resolved.length).toBeGreaterThan(0);
  await waitFor(() => [...got.values()].every((seen) => all.every((seq) => seen.has(seq))), 120_000, `all ${all.length} events in both groups`);
  expect(early).toBe(0);
  const entries = await streamEntryIds(s.client(), s.block['prefix'] as string);
  expect(entries.length).toBe(new Set(entries).size);
  expect(await scheduledLeft(s.client(), s.block['prefix'] as string)).toBe(0);
  const late = [...got.get('g1')!.values()].sort((a, b) => a - b);
  console.log(
    `delayed: ${all.length} events (${child.resolved.length} from the killed child), handler duplicates ${duplicates}, lateness p50 ${late[late.length >> 1]} ms, max ${late[late.length - 1]} ms`,
  );
}

/** The event ids of every entry of the type's partition streams. */
async function streamEntryIds(c: Redis | Cluster, prefix: string): Promise<string[]> {
  const ids: string[] = [];
  for (let p = 0; p < PARTITIONS; p++) {
    const entries = (await c.xrange(`${prefix}:{order.created:${p}}`, '-', '+')) as [string, string[]][];
    for (const [, fields] of entries) ids.push(fields[fields.indexOf('id') + 1]!);
  }
  return ids;
}

async function scheduledLeft(c: Redis | Cluster, prefix: string): Promise<number> {
  let n = 0;
  for (let p = 0; p < PARTITIONS; p++) n += (await c.zcard(`${prefix}:{order.created:${p}}:delayed`)) + (await c.hlen(`${prefix}:{order.created:${p}}:delayed:data`));
  return n;
}

describe('redis-streams delayed delivery with several movers', () => {
  it('two buses moving due events of one type deliver each event once per group', async () => {
    const s = await server();
    const block = { type: 'redis-streams', url: s.url, prefix: uniquePrefix('delayed-movers'), partitions: PARTITIONS };
    const a = await bus(block, 'mover-a');
    const b = await bus(block, 'mover-b');
    const counts = new Map<string, Map<number, number>>();
    for (const [group, member] of [
      ['g1', a],
      ['g2', b],
    ] as const) {
      const seen = new Map<number, number>();
      counts.set(group, seen);
      await member.subscribe('order.created', { group, concurrency: 32, blockMs: 200 }, (e) => void seen.set(e.data.seq, (seen.get(e.data.seq) ?? 0) + 1));
    }
    const at = Date.now() + 500;
    const payloads = Array.from({ length: 5000 }, (_, seq) => ({ orderId: `o-${seq}`, amount: at, seq }));
    await Promise.all([a.publishMany('order.created', payloads.slice(0, 2500), { deliverAt: at }), b.publishMany('order.created', payloads.slice(2500), { deliverAt: at })]);
    await waitFor(() => [...counts.values()].every((seen) => seen.size === 5000), 30_000, 'every event in both groups');
    await sleep(500);
    for (const seen of counts.values()) expect([...seen.values()].every((n) => n === 1)).toBe(true);
  }, 60_000);
});

describe('redis-streams delayed delivery through crashes', () => {
  it('100,000 delayed events over 10 s reach both groups, none early, each moved once, through a Redis SIGKILL and a killed publisher', async () => {
    const s = await server({ aof: true });
    const client = new Redis(s.port);
    client.on('error', () => undefined); // down while the server restarts
    cleanup.push(() => client.disconnect());
    await runScenario({
      block: { type: 'redis-streams', url: s.url, prefix: uniquePrefix('delayed'), partitions: PARTITIONS },
      count: 100_000,
      crash: async () => {
        await s.crash();
        await sleep(1000);
        await s.restart();
      },
      client: () => client,
    });
  }, 240_000);

  it('on a 3-master Cluster (AOF), through a master SIGKILL and a killed publisher', async () => {
    const cluster = await RedisCluster.start(3, 0, 15_000, true, ['--appendonly', 'yes', '--appendfsync', 'always']);
    cleanup.push(() => cluster.stop());
    const client = new Cluster(cluster.nodes);
    client.on('error', () => undefined);
    cleanup.push(() => client.disconnect());
    const prefix = uniquePrefix('delayed-cluster');
    await runScenario({
      block: { type: 'redis-streams', cluster: { nodes: cluster.nodes }, prefix, partitions: PARTITIONS },
      count: 30_000,
      crash: async () => {
        const master = await cluster.masterOf(`${prefix}:{order.created:0}`);
        await master.crash();
        await sleep(1000);
        await master.restart();
      },
      client: () => client,
    });
  }, 240_000);
});
