/**
 * Replication: the transport reaches the master through a Sentinel (`redisOptions.sentinels`) and keeps
 * publishing and consuming across failovers; `waitForReplicas` resolves a publish only once replicas
 * hold it, so a master that crashes right after does not take acknowledged events with it.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { Redis } from 'ioredis';
import { ConfigError, ConnectionError, createEventBus, ReplicationError, type EventBus } from '../../src/index.js';
import { freePort, RedisServer, uniquePrefix } from '../helpers/redis-server.js';
import { RedisSentinelSet } from '../helpers/redis-sentinel.js';
import { sleep, waitFor } from '../helpers/wait.js';
import { streamKey } from '../../transports/redis-streams/index.js';
import { events, fastRead, order, publishThrough } from './redis-common.js';

type Bus = EventBus<typeof events>;

const cleanup: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const f of cleanup.splice(0).reverse()) await f().catch(() => undefined);
});

/** A fresh master, `replicas` replicas and a Sentinel for one test. */
async function sentinelSet(replicas: number): Promise<RedisSentinelSet> {
  const set = await RedisSentinelSet.start(replicas);
  cleanup.push(() => set.stop());
  return set;
}

async function sentinelBus(set: RedisSentinelSet, extra: Record<string, unknown> = {}): Promise<Bus> {
  const b = await createEventBus({
    service: 'it',
    events,
    transport: { type: 'redis-streams', redisOptions: set.redisOptions, prefix: uniquePrefix('sentinel'), partitions: 2, commandTimeoutMs: 8000, ...extra },
  });
  cleanup.push(() => b.close());
  return b;
}

describe('redis-streams: replication', () => {
  it('publishes and consumes through a Sentinel, and carries on after a graceful failover with nothing lost', async () => {
    const set = await sentinelSet(1);
    const b = await sentinelBus(set);
    const seen = new Set<number>();
    await b.subscribe('order.created', { group: 'g', concurrency: 4, ...fastRead }, (e) => void seen.add(e.data.seq));
    await Promise.all(Array.from({ length: 100 }, (_, i) => b.publish('order.created', order(i))));
    await waitFor(() => seen.size === 100, 10_000, 'events before the failover');

    const first = await set.masterPort();
    const r = await publishThrough(b, 100, async () => {
      expect(await set.failover('graceful')).not.toBe(first);
      await sleep(500);
    });
    expect(Object.keys(r.tally).filter((k) => k.startsWith('untyped'))).toEqual([]);
    expect(r.accepted.length).toBeGreaterThan(0);

    const after = Array.from({ length: 200 }, (_, i) => r.next + i);
    await Promise.all(after.map((s) => b.publish('order.created', order(s))));
    await waitFor(() => after.every((s) => seen.has(s)) && r.accepted.every((s) => seen.has(s)), 20_000, 'every accepted event, on the new master');
  }, 90_000);

  // The master dies while its replicas have not received its latest writes: both replicas stall
  // (SIGSTOP) behind more replication traffic than the kernel buffers hold, events are published, the
  // master is killed and the replicas go on. Without waitForReplicas those events were acknowledged and
  // are gone (the control: it shows the scenario loses writes); with it they were never acknowledged.
  for (const wait of [false, true]) {
    it(`${wait ? 'with' : 'without'} waitForReplicas, a master killed before replicating ${wait ? 'loses no acknowledged event' : 'loses acknowledged events'}`, async () => {
      // Two replicas: one is promoted, the other follows it, so WAIT can be met again afterwards.
      const set = await sentinelSet(2);
      const b = await sentinelBus(set, wait ? { waitForReplicas: { count: 1, timeoutMs: 200 } } : {});
      await Promise.all(Array.from({ length: 100 }, (_, i) => b.publish('order.created', order(i))));

      const { master, replicas } = await set.roles();
      const raw = new Redis(master.url);
      raw.on('error', () => undefined); // it outlives the master
      cleanup.push(async () => raw.disconnect());
      for (const r of replicas) r.pause();
      try {
        // 24 MB of other writes fill the replication sockets; what follows waits in the master's memory.
        const filler = raw.pipeline();
        const blob = 'x'.repeat(8192);
        for (let i = 0; i < 3000; i++) filler.xadd('filler', '*', 'd', blob);
        await filler.exec();
        const outcomes = await Promise.allSettled(Array.from({ length: 50 }, (_, i) => b.publish('order.created', order(100 + i))));
        const acknowledged = outcomes.flatMap((o, i) => (o.status === 'fulfilled' ? [100 + i] : []));
        for (const o of outcomes) if (o.status === 'rejected') expect(o.reason).toBeInstanceOf(ReplicationError);
        await master.crash();
        for (const r of replicas) r.resume();

        // The Sentinel promotes a replica; publishing carries on there, and a new group reads all it holds.
        await waitFor(async () => (await set.masterPort()) !== master.port, 30_000, 'the failover');
        await set.replicasOnline(wait ? 1 : 0);
        const after = Array.from({ length: 100 }, (_, i) => 1000 + i);
        await Promise.all(after.map((s) => b.publish('order.created', order(s))));
        const held = new Set<number>();
        await b.subscribe('order.created', { group: 'after', startFrom: '0', concurrency: 4, ...fastRead }, (e) => void held.add(e.data.seq));
        await waitFor(() => after.every((s) => held.has(s)), 30_000, 'events published after the failover');
        expect(Array.from({ length: 100 }, (_, i) => i).every((s) => held.has(s))).toBe(true); // replicated before the stall
        const lost = acknowledged.filter((s) => !held.has(s));
        if (wait) {
          expect(acknowledged).toEqual([]); // no replica had them: every publish rejected
          expect(lost).toEqual([]);
        } else {
          expect(acknowledged.length).toBe(50);
          expect(lost.length).toBeGreaterThan(0);
        }
      } finally {
        for (const r of replicas) r.resume();
      }
    }, 120_000);
  }

  it('rejects with ReplicationError when too few replicas acknowledge, and the events stay on the master', async () => {
    const s = await RedisServer.start(); // no replicas
    const prefix = uniquePrefix('wait');
    const b = await createEventBus({ service: 'it', events, transport: { type: 'redis-streams', url: s.url, prefix, partitions: 2, waitForReplicas: { count: 1, timeoutMs: 50 } } });
    const r = new Redis(s.url);
    try {
      const err = await b.publish('order.created', order(1)).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(ReplicationError);
      expect(err).toMatchObject({ code: 'ERR_REPLICATION', acknowledged: 0, required: 1, retryable: true });
      expect((err as Error).message).toContain('transport.waitForReplicas');
      // A write of both partitions' units (one pipeline, one WAIT) fails for both, and every entry was stored.
      const many = await b.publishMany('order.created', [order(2), order(3), order(4)]).catch((e: unknown) => e);
      expect(many).toBeInstanceOf(ReplicationError);
      expect((await r.xlen(streamKey(prefix, 'order.created', 0))) + (await r.xlen(streamKey(prefix, 'order.created', 1)))).toBe(3);
    } finally {
      r.disconnect();
      await b.close();
      await s.stop();
    }
  }, 30_000);

  it('unreachable Sentinels: connect rejects with ConnectionError naming the master and the Sentinels', async () => {
    const port = await freePort();
    const t0 = Date.now();
    const err = await createEventBus({
      service: 'it',
      events,
      transport: { type: 'redis-streams', redisOptions: { sentinels: [{ host: '127.0.0.1', port }], name: 'nowhere' }, commandTimeoutMs: 500 },
    }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ConnectionError);
    expect((err as Error).message).toContain(`redis sentinel "nowhere" via 127.0.0.1:${port}`);
    expect((err as Error).message).toContain('within 500 ms (transport.commandTimeoutMs)');
    expect(Date.now() - t0).toBeLessThan(5000);
  });

  it('refuses a WAIT timeout that commandTimeoutMs would cut short', async () => {
    await expect(
      createEventBus({ service: 'it', events, transport: { type: 'redis-streams', url: 'redis://127.0.0.1:1', commandTimeoutMs: 1000, waitForReplicas: { count: 1, timeoutMs: 1000 } } }),
    ).rejects.toThrow(ConfigError);
    await expect(
      createEventBus({ service: 'it', events, transport: { type: 'redis-streams', url: 'redis://127.0.0.1:1', commandTimeoutMs: 1000, waitForReplicas: { count: 1, timeoutMs: 1000 } } }),
    ).rejects.toThrow('transport.waitForReplicas.timeoutMs');
  });
});
