/**
 * Redis Cluster: a subscription's close() returns promptly when its read connections were just killed, while
 * every node is stalled, and while every node is down; and a killed read connection is replaced.
 *
 * A consumer's blocking XREADGROUP has no command timeout (blockMs and the read watchdog bound it; both are set
 * far beyond the bounds asserted here, so neither can rescue a read that close() leaves unsettled). Two ways an
 * ioredis 5.11 Cluster read client never settles its read once disconnected, both handled by connection.ts's
 * disconnectNow:
 *  - Every node down (last test): the client loses its node connections, its pool drains and it waits between
 *    reconnect attempts (status 'reconnecting'), the read in its offline queue. disconnect() settles nothing (the
 *    pool is empty already: no 'close' or 'end' comes to flush that queue); disconnectNow flushes it.
 *  - Read connections killed, nodes up: the read fails with "Connection is closed." while the client is 'ready'
 *    and waits in the client's delay queue to be sent again after retryDelayOnFailover (100 ms). A client whose
 *    pool held no other node client (every one had been connected, so every one was killed) goes 'reconnecting'
 *    meanwhile. Disconnected then, it stays 'disconnecting' for good, and the retry, when it fires, queues the read
 *    offline, after any flush. disconnectNow turns the Cluster's offline queue off so that the retry is rejected.
 *    Whether a client's pool was all connected is chance (ioredis sends the ready check and a PING to random
 *    masters), hence many partitions (a read client each) and several close() delays inside the retry's 100 ms.
 */
import { describe, expect, it } from 'vitest';
import { ClosedError, ConnectionError, createEventBus, EventlaneError, type EventBus } from '../../src/index.js';
import { uniquePrefix, withRedis } from '../helpers/redis-server.js';
import { clusterForTests } from '../helpers/redis-cluster.js';
import { boundedClose, sleep, waitFor } from '../helpers/wait.js';
import { events, order, orders } from './redis-common.js';
import { partitionForKey } from '../../src/partition.js';
import { streamKey } from '../../transports/redis-streams/index.js';

// A long node timeout: a stalled master stays its slots' master (no failover) while the tests run.
const cluster = clusterForTests(3, 0, 60_000);

/** One read client per partition: the more clients, the likelier one of them goes 'reconnecting' when killed. */
const PARTITIONS = 12;
/** Reads block far longer than any bound asserted here (the watchdog waits half of commandTimeoutMs more). */
const SLOW_READS = { group: 'g', blockMs: 20_000, minIdleMs: 60_000 };
/** How long close() may take: well under blockMs and the watchdog, well over a prompt close. */
const CLOSE_BOUND_MS = 3000;

function clusterBus(prefix: string, transport: Record<string, unknown> = {}, drainTimeoutMs?: number): Promise<EventBus<typeof events>> {
  return createEventBus({
    service: 'it',
    events,
    drainTimeoutMs,
    transport: { type: 'redis-streams', cluster: { nodes: cluster().nodes }, prefix, partitions: PARTITIONS, commandTimeoutMs: 1000, ...transport },
  });
}

/** CLIENT LIST lines, on every node, of this process's read connections (Cluster node and refresher connections alike). */
async function readConnections(): Promise<{ port: number; id: string; line: string }[]> {
  const out: { port: number; id: string; line: string }[] = [];
  for (const s of cluster().servers) {
    const lines = String(await withRedis(s.port, (c) => c.client('LIST'))).split('\n');
    for (const line of lines.filter((l) => l.includes(`name=eventlane:read:${process.pid}:`))) out.push({ port: s.port, id: /\bid=(\d+)/.exec(line)![1]!, line });
  }
  return out;
}

/** Waits until every partition's reader is blocked in XREADGROUP. */
async function readersBlocked(): Promise<void> {
  await waitFor(
    async () => (await readConnections()).filter((r) => r.line.includes('cmd=xreadgroup') && / flags=\S*b/.test(r.line)).length === PARTITIONS,
    10_000,
    'every reader to block in XREADGROUP',
  );
}

/** CLIENT KILL of every read connection of this process, all of a node's in one write; returns how many were killed. */
async function killReadConnections(): Promise<number> {
  const conns = await readConnections();
  const killed = await Promise.all(
    cluster().servers.map((s) =>
      withRedis(s.port, async (c) => {
        const p = c.pipeline();
        for (const r of conns.filter((x) => x.port === s.port)) p.client('KILL', 'ID', r.id);
        return ((await p.exec()) ?? []).filter(([err, n]) => err === null && n === 1).length;
      }),
    ),
  );
  return killed.reduce((a, b) => a + b, 0);
}

describe('redis-streams: cluster read connections killed or unreachable', () => {
  // Inside the 100 ms before the killed reads are sent again (held in the delay queue), and after (sent again).
  it.each([0, 20, 40, 60, 80, 200])('close() %i ms after the read connections were killed returns promptly, leaving none open', async (delayMs) => {
    const b = await clusterBus(uniquePrefix('cluster-kill-close'));
    await b.subscribe('order.created', SLOW_READS, () => undefined);
    await readersBlocked();
    expect(await killReadConnections()).toBeGreaterThanOrEqual(PARTITIONS);
    await sleep(delayMs);
    expect(await boundedClose(b, CLOSE_BOUND_MS)).toBe('closed');
    // No retry still to come reconnects after close (the reads are sent again 100 ms after the kill).
    await sleep(300);
    expect(await readConnections()).toEqual([]);
  });

  it('a subscription whose read connections were killed goes on reading on new ones', async () => {
    const b = await clusterBus(uniquePrefix('cluster-kill-resume'));
    try {
      const seen = new Set<number>();
      await b.subscribe('order.created', { ...SLOW_READS, blockMs: 500 }, (e) => void seen.add(e.data.seq));
      await b.publishMany('order.created', orders(30));
      await waitFor(() => seen.size === 30, 10_000, 'the events before the kill');
      await readersBlocked();
      expect(await killReadConnections()).toBeGreaterThanOrEqual(PARTITIONS);
      await b.publishMany('order.created', orders(30, 30));
      await waitFor(() => seen.size === 60, 10_000, 'the events published after the kill');
    } finally {
      await b.close();
    }
  });

  /** A publish rejects with `kind` within the bound (commandTimeoutMs is 1000), close() returns in time, publish then rejects with ClosedError. */
  async function publishFailsThenCloses(b: Awaited<ReturnType<typeof clusterBus>>, kind: new (...args: never[]) => Error): Promise<void> {
    const started = Date.now();
    const err = await b.publish('order.created', orders(1)[0]!).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(kind);
    expect(Date.now() - started).toBeLessThan(CLOSE_BOUND_MS);
    expect(await boundedClose(b, CLOSE_BOUND_MS)).toBe('closed');
    await expect(b.publish('order.created', orders(1, 1)[0]!)).rejects.toBeInstanceOf(ClosedError);
  }

  // Stalled nodes keep their connections open: no client reconnects, its reads just get no reply.
  it('every node stalled (SIGSTOP): publish rejects with a typed error, close() returns promptly', async () => {
    const b = await clusterBus(uniquePrefix('cluster-stalled'));
    await b.subscribe('order.created', SLOW_READS, () => undefined);
    await readersBlocked();
    for (const s of cluster().servers) s.pause();
    try {
      await publishFailsThenCloses(b, EventlaneError);
    } finally {
      for (const s of cluster().servers) s.resume();
    }
  });

  /** A connected bus, the master of partition 0 (to stall) and a partition on another master; keyOf(p): a key of partition p. */
  async function oneMasterToStall(name: string, transport: Record<string, unknown> = {}, drainTimeoutMs?: number) {
    const prefix = uniquePrefix(name);
    const b = await clusterBus(prefix, transport, drainTimeoutMs);
    const keyOf = (p: number) => Array.from({ length: 1000 }, (_, i) => `k${i}`).find((k) => partitionForKey(k, PARTITIONS) === p)!;
    const stalled = await cluster().masterOf(streamKey(prefix, 'order.created', 0));
    let other = 1;
    while ((await cluster().masterOf(streamKey(prefix, 'order.created', other))) === stalled) other++;
    await b.publish('order.created', order(0), { key: keyOf(0) }); // connections up
    return { prefix, b, keyOf, stalled, other };
  }

  // A write out longer than 200 ms frees its write slot and keeps its partition's turn until its XADD's
  // reply; a master that stopped answering never replies, so the turn must end with the write's own timeout.
  it('one master stalled: each write to its partition rejects after commandTimeoutMs (the first one does not hold the next for good); the other masters take writes', async () => {
    const { b, keyOf, stalled, other } = await oneMasterToStall('cluster-one-stalled');
    stalled.pause();
    try {
      const first = b.publish('order.created', order(1), { key: keyOf(0) }).catch((e: unknown) => e);
      await sleep(400); // its slot freed (200 ms), its partition held
      const t0 = Date.now();
      await b.publish('order.created', order(2), { key: keyOf(other) });
      expect(Date.now() - t0).toBeLessThan(500);
      expect(await first).toBeInstanceOf(ConnectionError);
      // The next write to partition 0 does not wait for the first one's XADD reply, which never comes.
      const t1 = Date.now();
      const second = await Promise.race([b.publish('order.created', order(3), { key: keyOf(0) }).catch((e: unknown) => e), sleep(5000).then(() => 'still waiting')]);
      expect(second).toBeInstanceOf(ConnectionError);
      expect(Date.now() - t1).toBeLessThan(3000);
    } finally {
      stalled.resume();
    }
    await boundedClose(b, CLOSE_BOUND_MS);
  });

  // A batch spread over masters: each unit settles with its own XADD's reply, not with the whole write.
  it('one master stalled: a publish batched with a write to it resolves once its own master replies', async () => {
    const { b, keyOf, stalled, other, prefix } = await oneMasterToStall('cluster-one-stalled-batch');
    const before = b.stats();
    stalled.pause();
    try {
      const t0 = Date.now();
      // In one turn: one batch, a unit for each master.
      const toStalled = b.publish('order.created', order(1), { key: keyOf(0) }).catch((e: unknown) => e);
      const toOther = b.publish('order.created', order(2), { key: keyOf(other) }).then(() => Date.now() - t0);
      // It resolves once its own master replies, not with the whole write when the stalled master's XADD times out.
      expect(await toOther).toBeLessThan(500);
      expect(b.stats().batches - before.batches).toBe(1);
      expect(await toStalled).toBeInstanceOf(ConnectionError);
      expect(Date.now() - t0).toBeGreaterThanOrEqual(900);
      const after = b.stats();
      expect(after.events - before.events).toBe(2);
      expect(after.failedEvents - before.failedEvents).toBe(1);
      expect(after.pendingEvents).toBe(0);
    } finally {
      stalled.resume();
    }
    const stored = await withRedis((await cluster().masterOf(streamKey(prefix, 'order.created', other))).port, (c) => c.xlen(streamKey(prefix, 'order.created', other)));
    expect(stored).toBe(1);
    await boundedClose(b, CLOSE_BOUND_MS);
  });

  // Each master's part of a batched write settles on its own: the part for a healthy master does not wait for
  // the turn of a partition on the stalled one, which a write out there holds until it settles.
  it("one master stalled, its partition held by a write out there: a batch to it and to another master resolves the other's publish at once", async () => {
    const { b, keyOf, stalled, other } = await oneMasterToStall('cluster-one-stalled-held', { commandTimeoutMs: 3000 });
    stalled.pause();
    try {
      const first = b.publish('order.created', order(1), { key: keyOf(0) }).catch((e: unknown) => e);
      await sleep(400); // its slot freed (200 ms), its partition held until it settles (commandTimeoutMs)
      const before = b.stats();
      const t0 = Date.now();
      // In one turn: one batch, a unit for each master.
      const toStalled = b.publish('order.created', order(2), { key: keyOf(0) }).catch((e: unknown) => e);
      const toOther = b.publish('order.created', order(3), { key: keyOf(other) }).then(() => Date.now() - t0);
      expect(await toOther).toBeLessThan(1000);
      expect(b.stats().batches - before.batches).toBe(1);
      expect(await first).toBeInstanceOf(ConnectionError);
      expect(await toStalled).toBeInstanceOf(ConnectionError);
    } finally {
      stalled.resume();
    }
    await boundedClose(b, CLOSE_BOUND_MS);
  });

  // close() after drainTimeoutMs closes the transport: a write still queued behind its partition's turn was
  // never sent, so it rejects with ClosedError at once; the write out on the stalled master may have been
  // applied (and close() waits up to commandTimeoutMs for the stalled master's connection to quit).
  it('close() while a write to a stalled master holds its partition: the write queued behind it rejects with ClosedError', async () => {
    const commandTimeoutMs = 4000;
    const { b, keyOf, stalled } = await oneMasterToStall('cluster-close-queued', { commandTimeoutMs }, 300);
    stalled.pause();
    try {
      const first = b.publish('order.created', order(1), { key: keyOf(0) }).catch((e: unknown) => e);
      await sleep(600); // sent, its slot freed and its partition held until it settles
      const t0 = Date.now();
      const queued = b.publish('order.created', order(2), { key: keyOf(0) }).then(
        () => 'resolved',
        (e: unknown) => ({ e, ms: Date.now() - t0 }),
      );
      await sleep(200);
      const closed = boundedClose(b, commandTimeoutMs + CLOSE_BOUND_MS);
      const q = await queued;
      expect(q).not.toBe('resolved');
      const { e, ms } = q as { e: unknown; ms: number };
      expect(e).toBeInstanceOf(ClosedError);
      expect(ms).toBeLessThan(commandTimeoutMs - 1000); // rejected by close(), not by its deadline
      expect(await closed).toBe('closed');
      const out = await first;
      expect(out).toBeInstanceOf(ConnectionError);
      expect((out as Error).message).toContain('may or may not have been applied');
    } finally {
      stalled.resume();
    }
  });

  // Last: it stops every node for good (afterAll then only cleans up their directories).
  it('every node down, read clients between reconnect attempts: publish rejects with ConnectionError, close() returns promptly', async () => {
    const b = await clusterBus(uniquePrefix('cluster-down'));
    await b.subscribe('order.created', SLOW_READS, () => undefined);
    await readersBlocked();
    await Promise.all(cluster().servers.map((s) => s.crash()));
    // Each read client loses its node connections, its pool drains and it goes 'reconnecting', where it stays
    // but for a few ms per attempt (refused at once), its read in the offline queue.
    await sleep(500);
    await publishFailsThenCloses(b, ConnectionError);
  });
});
