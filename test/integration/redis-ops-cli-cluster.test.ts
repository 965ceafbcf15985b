/**
 * The `eventlane-redis` operations CLI with `--cluster`, against a 3-master Redis Cluster whose nodes require a
 * password: one seed URL carrying it reaches every master (streams, groups, dead letters over all partitions,
 * replay and purge across masters); a bus configured with such a seed does the same.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ConnectionError, createEventBus, type EventBus } from '../../src/index.js';
import { uniquePrefix, withRedis } from '../helpers/redis-server.js';
import { RedisCluster } from '../helpers/redis-cluster.js';
import { waitFor } from '../helpers/wait.js';
import { runOpsCli } from '../../transports/redis-streams/ops-cli.js';
import { events, fastRead, orders } from './redis-common.js';

const PASSWORD = 'cli-secret';
const prefix = uniquePrefix('opscli-cluster');
let cluster: RedisCluster;
let bus: EventBus<typeof events>;
let failing = true;
const handled = new Set<number>();

async function cli(...args: string[]): Promise<{ code: number; out: string; err: string }> {
  const out: string[] = [];
  const err: string[] = [];
  const code = await runOpsCli(args, { out: (t) => out.push(t), err: (t) => err.push(t), env: {} });
  return { code, out: out.join('\n'), err: err.join('\n') };
}

/** One seed, as a URL with the password: the CLI must find (and authenticate to) the other masters itself. */
function seed(): string[] {
  return ['--cluster', `redis://:${PASSWORD}@127.0.0.1:${cluster.nodes[0]!.port}`, '--prefix', prefix, '--timeout-ms', '5000'];
}

beforeAll(async () => {
  cluster = await RedisCluster.start(3);
  // Set after the cluster is built (the harness's own checks connect without a password).
  for (const s of cluster.servers) await withRedis(s.port, (c) => c.config('SET', 'requirepass', PASSWORD));
  bus = await createEventBus({ service: 'it', events, transport: { type: 'redis-streams', cluster: { nodes: cluster.nodes }, redisOptions: { password: PASSWORD }, prefix, partitions: 6 } });
  // Every 5th event fails while `failing`: dead-lettered at once (maxDeliveries 1), over several partitions.
  await bus.subscribe('order.created', { group: 'billing', maxDeliveries: 1, ...fastRead }, (e) => {
    if (failing && e.data.seq % 5 === 0) throw new Error(`poison ${e.data.seq}`);
    handled.add(e.data.seq);
  });
  await bus.publishMany('order.created', orders(60), { key: (o) => o.orderId });
  await waitFor(() => handled.size === 48, 15_000, 'the events that do not fail');
}, 120_000);

afterAll(async () => {
  await bus?.close();
  await cluster?.stop();
});

describe('eventlane-redis --cluster', () => {
  it('lists streams, groups and dead letters of every master from one seed URL carrying the password', async () => {
    const streams = await cli('streams', ...seed(), '--json');
    expect(streams.err).toBe('');
    expect(streams.code).toBe(0);
    const list = JSON.parse(streams.out) as { partition: number; length: number }[];
    expect(list.map((s) => s.partition)).toEqual([0, 1, 2, 3, 4, 5]);

    await waitFor(async () => JSON.parse((await cli('dlq', 'order.created', ...seed(), '--json')).out || '[]').length === 12, 10_000, 'twelve dead letters');
    const letters = JSON.parse((await cli('dlq', 'order.created', ...seed(), '--json')).out) as { partition: number }[];
    expect(new Set(letters.map((d) => d.partition)).size).toBeGreaterThan(1);
    const groups = JSON.parse((await cli('groups', 'order.created', ...seed(), '--json')).out) as { group: string; pending: number }[];
    expect(groups).toMatchObject([{ group: 'billing', pending: 0 }]);
  });

  it('replays dead letters of partitions on different masters to their group, then purges what is left', async () => {
    failing = false;
    const replay = await cli('replay', 'order.created', ...seed(), '--group', 'billing');
    expect(replay.err).toBe('');
    expect(replay.out).toBe('replayed 12 dead letters');
    await waitFor(() => handled.size === 60, 15_000, 'the replayed events');
    expect((await cli('dlq', 'order.created', ...seed())).out).toBe('(none)');
    expect((await cli('purge', 'order.created', ...seed(), '--all')).out).toBe('purged 0 dead letters');
  });

  it('a wrong password fails connecting at once with a ConnectionError that names where the credentials are given, not after the timeout', async () => {
    const t0 = Date.now();
    const nodes = cluster.nodes.map((n) => `redis://:wrong@127.0.0.1:${n.port}`);
    const err = await createEventBus({ service: 'it', events, transport: { type: 'redis-streams', cluster: { nodes }, commandTimeoutMs: 8000 } }).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(ConnectionError);
    expect((err as Error).message).toMatch(/refused the credentials \(the user and password of the seed URLs in transport\.cluster\.nodes, or of transport\.redisOptions\).*WRONGPASS/);
    expect(Date.now() - t0).toBeLessThan(4000);
    const viaCli = await cli('streams', '--cluster', nodes[0]!, '--timeout-ms', '8000');
    expect(viaCli.code).toBe(1);
    expect(viaCli.err).toContain('refused the credentials (the user and password of the seed URLs in --cluster)');
  });

  it('seed URLs that disagree on the password are bad usage', async () => {
    const r = await cli('streams', '--cluster', `redis://:a@127.0.0.1:${cluster.nodes[0]!.port},redis://:b@127.0.0.1:${cluster.nodes[1]!.port}`);
    expect(r.code).toBe(2);
    expect(r.err).toContain('different passwords');
  });

  it('a bus given one seed URL with the password reaches every master (the transport applies it to all nodes)', async () => {
    const url = `redis://:${PASSWORD}@127.0.0.1:${cluster.nodes[0]!.port}`;
    const b = await createEventBus({
      service: 'it',
      events,
      transport: { type: 'redis-streams', cluster: { nodes: [url] }, prefix: uniquePrefix('seed-url'), partitions: 6, commandTimeoutMs: 5000 },
    });
    try {
      await b.publishMany('order.created', orders(60)); // round-robin over 6 partitions on 3 masters
      expect(b.stats().failedEvents).toBe(0);
    } finally {
      await b.close();
    }
    // The ioredis way of giving node options (cluster.options.redisOptions) reaches every node too: merged with
    // the transport's own node options, not replaced by them, so the password is sent.
    const viaOptions = await createEventBus({
      service: 'it',
      events,
      transport: {
        type: 'redis-streams',
        cluster: { nodes: cluster.nodes, options: { redisOptions: { password: PASSWORD } } },
        prefix: uniquePrefix('node-opts'),
        partitions: 6,
        commandTimeoutMs: 5000,
      },
    });
    try {
      await viaOptions.publishMany('order.created', orders(60));
      expect(viaOptions.stats().failedEvents).toBe(0);
    } finally {
      await viaOptions.close();
    }
    const conflicting = createEventBus({ service: 'it', events, transport: { type: 'redis-streams', cluster: { nodes: [url, `redis://:other@127.0.0.1:${cluster.nodes[1]!.port}`] } } });
    await expect(conflicting).rejects.toMatchObject({ code: 'ERR_CONFIG', message: expect.stringContaining('cluster.nodes') });
  });
});
