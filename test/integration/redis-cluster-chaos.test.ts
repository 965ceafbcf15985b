/**
 * Seeded chaos against a real Redis Cluster (3 masters with a replica each) with `waitForReplicas`: while
 * publishes flow to every partition, the master of a partition drawn from the seed is killed (SIGKILL) at a
 * time drawn from the seed, and left down: its replica takes its slots over, with no replica of its own, so
 * every WAIT on it falls short. Publishing goes on until well after the client follows the failover.
 *
 * The publish pattern (pauses, partitions, single publishes or publishMany of 2-5 events) and the kill are
 * drawn from the seed; `EVENTLANE_CHAOS_SEED=<n>` replays them (timing still varies from run to run).
 *
 * Verdict:
 *  - every publish settles within its bound: commandTimeoutMs to be sent, then commandTimeoutMs plus the WAIT
 *    timeout for its replies;
 *  - publishes to the other masters resolve, none waiting;
 *  - publishes to the failed master's partitions resolve or reject with ConnectionError or ReplicationError;
 *    every one started once the client has followed the failover rejects with ReplicationError;
 *  - every event whose publish resolved or rejected with ReplicationError (written, too few replicas) is
 *    stored: the streams are read back.
 */
import { Cluster } from 'ioredis';
import { describe, expect, it } from 'vitest';
import { createEventBus, type EventBus } from '../../src/index.js';
import { partitionForKey } from '../../src/partition.js';
import { uniquePrefix } from '../helpers/redis-server.js';
import { clusterForTests } from '../helpers/redis-cluster.js';
import { prng } from '../helpers/prng.js';
import { sleep } from '../helpers/wait.js';
import { decodeEntry, streamKey } from '../../transports/redis-streams/index.js';
import { events, order } from './redis-common.js';

const SEED = process.env['EVENTLANE_CHAOS_SEED'] ? Number(process.env['EVENTLANE_CHAOS_SEED']) >>> 0 : Math.floor(Math.random() * 2 ** 32) >>> 0;
const TYPE = 'order.created';
const PARTITIONS = 6;
const COMMAND_MS = 1500;
const WAIT_MS = 500;
/** A publish's bound (see the verdict), with a margin for a loaded machine. */
const BOUND_MS = 2 * COMMAND_MS + WAIT_MS + 1500;
/** How long a publish to a master that is up and replicated may take: no wait behind another master. */
const HEALTHY_MS = 1000;
/** Publishing goes on this long after the client has followed the failover. */
const AFTER_FOLLOW_MS = 3000;

const cluster = clusterForTests(3, 1, 2000, false);

/** A key whose events go to partition `p`. */
function keyFor(p: number): string {
  return Array.from({ length: 1000 }, (_, i) => `k${i}`).find((k) => partitionForKey(k, PARTITIONS) === p)!;
}

interface Outcome {
  partition: number;
  seqs: number[];
  start: number;
  end: number;
  code: string;
  message?: string;
}

/** Reads back every event stored on the type's partitions: their `seq`s. */
async function storedSeqs(prefix: string): Promise<Set<number>> {
  const c = new Cluster(cluster().nodes.filter((_, i) => cluster().servers[i]!.alive));
  try {
    const out = new Set<number>();
    for (let p = 0; p < PARTITIONS; p++) {
      for (const [id, fields] of (await c.xrange(streamKey(prefix, TYPE, p), '-', '+')) as [string, string[]][]) {
        const d = decodeEntry(id, fields, TYPE);
        if ('events' in d) for (const ev of d.events) out.add((ev.data as { seq: number }).seq);
      }
    }
    return out;
  } finally {
    c.disconnect();
  }
}

/** The publishes and their outcomes; `publish` starts one (n > 1: a publishMany) to partition `p`. */
function publisher(b: EventBus<typeof events>, seq: { next: number }) {
  const outcomes: Outcome[] = [];
  const all: Promise<unknown>[] = [];
  const publish = (p: number, n: number): void => {
    const seqs = Array.from({ length: n }, () => seq.next++);
    const start = Date.now();
    const call = n === 1 ? b.publish(TYPE, order(seqs[0]!), { key: keyFor(p) }) : b.publishMany(TYPE, seqs.map(order), { key: keyFor(p) });
    const settled = call.then(
      () => ({ code: 'ok' }),
      (e: { code?: string; message?: string }) => ({ code: e.code ?? String(e), message: e.message }),
    );
    all.push(settled.then((r) => outcomes.push({ partition: p, seqs, start, end: Date.now(), ...r })));
  };
  return { outcomes, all, publish };
}

/**
 * Publishes on a seeded pattern while the victim's master is killed (at a seeded time) and its replica takes
 * over, until AFTER_FOLLOW_MS after the client followed: when that was (the end of the first publish to the
 * failed master's partitions that got its ReplicationError).
 */
async function publishThroughFailover(rand: () => number, publish: (p: number, n: number) => void, outcomes: Outcome[], failing: number[], victimKey: string): Promise<number> {
  const killAt = Date.now() + 500 + rand() * 1500;
  let failover: Promise<unknown> | undefined;
  let followedAt: number | undefined;
  for (;;) {
    const now = Date.now();
    if (failover === undefined && now >= killAt) failover = cluster().failover(victimKey);
    followedAt ??= outcomes.find((o) => failing.includes(o.partition) && o.code === 'ERR_REPLICATION')?.end;
    if (followedAt !== undefined && now - followedAt > AFTER_FOLLOW_MS) break;
    if (now - killAt > 40_000) throw new Error(`seed ${SEED}: the client did not follow the failover within 40 s`);
    const burst = 1 + Math.floor(rand() * 4);
    for (let i = 0; i < burst; i++) publish(Math.floor(rand() * PARTITIONS), rand() < 0.7 ? 1 : 2 + Math.floor(rand() * 4));
    await sleep(5 + rand() * 40);
  }
  await failover;
  return followedAt;
}

/** The verdict on the outcomes (see the file's comment), but for the streams read back. */
function judge(outcomes: Outcome[], failing: number[], followedAt: number): void {
  const tally: Record<string, number> = {};
  for (const o of outcomes) {
    const k = `${failing.includes(o.partition) ? 'failed master' : 'other masters'} ${o.code}`;
    tally[k] = (tally[k] ?? 0) + 1;
  }
  console.log(`cluster chaos seed ${SEED}: partitions ${failing.join(',')} on the failed master; ${JSON.stringify(tally)}`);
  expect(
    outcomes.filter((o) => o.end - o.start > BOUND_MS),
    `seed ${SEED}: publishes past their bound`,
  ).toEqual([]);
  const others = outcomes.filter((o) => !failing.includes(o.partition));
  expect(
    others.filter((o) => o.code !== 'ok' || o.end - o.start > HEALTHY_MS),
    `seed ${SEED}: publishes to the other masters`,
  ).toEqual([]);
  const onFailed = outcomes.filter((o) => failing.includes(o.partition));
  expect(
    onFailed.filter((o) => !['ok', 'ERR_CONNECTION', 'ERR_REPLICATION'].includes(o.code)),
    `seed ${SEED}: error classes`,
  ).toEqual([]);
  const afterFollow = onFailed.filter((o) => o.start > followedAt);
  expect(afterFollow.length, `seed ${SEED}: publishes after the client followed`).toBeGreaterThan(10);
  expect(
    afterFollow.filter((o) => o.code !== 'ERR_REPLICATION'),
    `seed ${SEED}: publishes to the promoted master`,
  ).toEqual([]);
}

describe(`redis-streams chaos: cluster failover with waitForReplicas, the old master left down (seed ${SEED})`, () => {
  it('every publish settles within its bound with the right error class, none resolved is lost, the other masters do not wait', async () => {
    console.log(`cluster chaos seed: ${SEED} (EVENTLANE_CHAOS_SEED=${SEED} to replay)`);
    const rand = prng(SEED);
    const prefix = uniquePrefix('cluster-chaos');
    const b = await createEventBus({
      service: 'it',
      events,
      transport: { type: 'redis-streams', cluster: { nodes: cluster().nodes }, prefix, partitions: PARTITIONS, commandTimeoutMs: COMMAND_MS, waitForReplicas: { count: 1, timeoutMs: WAIT_MS } },
    });
    const seq = { next: 0 };
    const { outcomes, all, publish } = publisher(b, seq);
    try {
      const key = (p: number) => streamKey(prefix, TYPE, p);
      for (let p = 0; p < PARTITIONS; p++) await b.publish(TYPE, order(seq.next++), { key: keyFor(p) }); // connections up
      const victim = await cluster().masterOf(key(Math.floor(rand() * PARTITIONS)));
      const failing: number[] = [];
      for (let p = 0; p < PARTITIONS; p++) if ((await cluster().masterOf(key(p))) === victim) failing.push(p);
      const followedAt = await publishThroughFailover(rand, publish, outcomes, failing, key(failing[0]!));
      await Promise.race([Promise.all(all), sleep(BOUND_MS + 5000)]);
      expect(outcomes.length, `seed ${SEED}: publishes settled`).toBe(all.length);
      judge(outcomes, failing, followedAt);
      const stored = await storedSeqs(prefix);
      const written = outcomes.filter((o) => o.code === 'ok' || o.code === 'ERR_REPLICATION').flatMap((o) => o.seqs);
      expect(
        written.filter((q) => !stored.has(q)),
        `seed ${SEED}: written events not stored`,
      ).toEqual([]);
    } finally {
      await b.close();
    }
  }, 90_000);
});
