/**
 * The least-privilege ACL rule of docs/redis-production.md, run as the page prints it on a real redis-server:
 * a round of publishing, consuming in a group, retries, dead letters, replay and purge, a long handler's
 * keepalive, reclaiming a dead consumer's entry, deleting that consumer, raising the partition count and the
 * admin API, all through the transport authenticated as that user, is refused nothing (ACL LOG stays empty)
 * and needs none of the transport's fallbacks (no warning beyond the handler failures). The same on a Redis
 * Cluster, the user created on every node.
 */
import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { createEventBus } from '../../src/index.js';
import { clusterForTests } from '../helpers/redis-cluster.js';
import { commandCalls, uniquePrefix, withRedis } from '../helpers/redis-server.js';
import { sleep, waitFor } from '../helpers/wait.js';
import { streamKey, type RedisStreamsTransport } from '../../transports/redis-streams/index.js';
import { events, order, orders, recordingLogger, redisForFile } from './redis-common.js';

const r = redisForFile();

/** The page's `redis-cli ACL SETUSER ...` line as the command's arguments (single quotes read as the shell does). */
function documentedRule(): string[] {
  const page = readFileSync(resolve(__dirname, '../../docs/redis-production.md'), 'utf8');
  const line = page.split('\n').find((l) => l.startsWith('redis-cli ACL SETUSER '));
  if (line === undefined) throw new Error('docs/redis-production.md has no `redis-cli ACL SETUSER` line');
  return line
    .slice('redis-cli '.length)
    .match(/'[^']*'|\S+/g)!
    .map((a) => a.replace(/^'(.*)'$/, '$1'));
}

/** The rule for `prefix` and `password`: the page's placeholders replaced, each of them present once. */
function ruleFor(prefix: string, password: string): string[] {
  const rule = documentedRule();
  expect(rule.filter((a) => a === '>CHANGE-ME' || a === '~el:*')).toEqual(['>CHANGE-ME', '~el:*']);
  return rule.map((a) => (a === '>CHANGE-ME' ? `>${password}` : a === '~el:*' ? `~${prefix}:*` : a));
}

const handlerWarnings = ['handler failed; the event will be retried', 'event dead-lettered'];

describe('redis-streams as the least-privilege ACL user of docs/redis-production.md', () => {
  it('a full round is refused nothing and falls back on nothing', async () => {
    const prefix = uniquePrefix('acl');
    const [user, password] = ['eventlane', `pw-${prefix}`];
    await r.raw.call('ACL', 'LOG', 'RESET');
    await r.raw.call('CONFIG', 'RESETSTAT');
    const [cmd, ...args] = ruleFor(prefix, password);
    expect(await r.raw.call(cmd!, ...args)).toBe('OK');
    r.cleanup.push(() => r.raw.call('ACL', 'DELUSER', user));

    const logger = recordingLogger();
    const url = `redis://${user}:${password}@127.0.0.1:${r.server.port}`;
    const bus = await createEventBus({
      service: 'acl',
      events,
      logger,
      transport: { type: 'redis-streams', url, prefix, partitions: 1, partitionsCheckMs: 100, minIdAgeMs: 3_600_000, maxDeadLetters: 10 },
    });
    r.cleanup.push(() => bus.close());

    // A consumer that died holding an entry: read with the default user, never acked.
    const key = streamKey(prefix, 'order.created', 0);
    await bus.publish('order.created', order(100));
    await r.raw.xgroup('CREATE', key, 'g', '0');
    await r.raw.xreadgroup('GROUP', 'g', 'dead', 'COUNT', 1, 'STREAMS', key, '>');

    const handled = new Set<number>();
    let slowOnce = true;
    const options = { group: 'g', maxDeliveries: 2, retry: { backoff: { initialMs: 10, maxMs: 20 } }, blockMs: 100, minIdleMs: 600, deleteIdleConsumersMs: 1 };
    await bus.subscribe('order.created', options, async (e, ctx) => {
      if (e.data.seq === 7) throw new Error('always fails');
      if (e.data.seq === 5 && ctx.attempt === 1) throw new Error('fails once');
      if (e.data.seq === 3 && slowOnce) {
        slowOnce = false;
        await sleep(1500); // past minIdleMs: only the keepalive keeps the entry here
      }
      handled.add(e.data.seq);
    });
    await bus.publishMany('order.created', orders(20));
    const admin = await (bus.transport as RedisStreamsTransport).admin();
    await waitFor(async () => handled.size === 20 && (await admin.deadLetters('order.created', 'g')).length === 1, 15_000, 'every order handled or dead-lettered');
    expect(handled.has(100)).toBe(true); // reclaimed from the dead consumer

    expect(await admin.replayDeadLetters('order.created', { group: 'g' })).toBe(1);
    await waitFor(async () => (await admin.deadLetters('order.created', 'g')).length === 1 && (await admin.unfinished('order.created', 'g')) === 0, 15_000, 'the replayed order dead-lettered again');
    expect(await admin.purgeDeadLetters('order.created', { group: 'g' })).toBe(1);

    expect(await admin.setPartitions('order.created', 2)).toEqual({ from: 1, partitions: 2 });
    await sleep(300); // past partitionsCheckMs: the bus publishes to and reads both partitions
    await bus.publishMany('order.created', orders(20, 200), { key: (o) => o.orderId });
    await bus.idle({ timeoutMs: 15_000 });
    expect([...handled].filter((s) => s >= 200)).toHaveLength(20);

    const groups = await admin.groups('order.created');
    expect(groups.map((g) => [g.group, g.lagEvents, g.pendingEvents])).toEqual([['g', 0, 0]]);
    expect((await admin.listStreams()).map((s) => s.partition).sort()).toEqual([0, 1]);
    await waitFor(async () => !((await r.raw.xinfo('CONSUMERS', key, 'g')) as unknown[][]).some((c) => String(c[1]) === 'dead'), 5000, 'the dead consumer deleted');
    await bus.close();

    expect(await r.raw.call('ACL', 'LOG')).toEqual([]);
    const unexpected = logger.lines.filter((l) => (l.level === 'warn' || l.level === 'error') && !handlerWarnings.includes(l.msg));
    expect(unexpected).toEqual([]);
    // The round ran the commands the rule exists for (the default user above ran none of these).
    const calls = await commandCalls(r.raw);
    for (const c of ['xautoclaim', 'xclaim', 'evalsha', 'eval', 'time', 'xgroup|delconsumer', 'xdel', 'scan', 'xinfo|groups']) {
      expect(calls.get(c) ?? 0, c).toBeGreaterThan(0);
    }
  });
});

describe('redis-streams on a Redis Cluster as the least-privilege ACL user of docs/redis-production.md', () => {
  const cluster = clusterForTests(3, 0, 5000);

  it('publishing, consuming with retries and dead letters, and the admin API are refused nothing on any node', async () => {
    const prefix = uniquePrefix('aclcluster');
    const [user, password] = ['eventlane', `pw-${prefix}`];
    const [cmd, ...args] = ruleFor(prefix, password);
    for (const s of cluster().servers) {
      await withRedis(s.port, async (c) => {
        await c.call('ACL', 'LOG', 'RESET');
        expect(await c.call(cmd!, ...args)).toBe('OK');
      });
    }
    const logger = recordingLogger();
    const bus = await createEventBus({
      service: 'acl',
      events,
      logger,
      // One seed URL's credentials reach every node.
      transport: { type: 'redis-streams', cluster: { nodes: cluster().nodes.map((n, i) => (i === 0 ? `redis://${user}:${password}@${n.host}:${n.port}` : n)) }, prefix, partitions: 6 },
    });
    try {
      const handled = new Set<number>();
      await bus.subscribe('order.created', { group: 'g', maxDeliveries: 2, retry: { backoff: { initialMs: 10, maxMs: 20 } }, blockMs: 100 }, (e, ctx) => {
        if (e.data.seq === 7 || (e.data.seq === 5 && ctx.attempt === 1)) throw new Error('fails');
        handled.add(e.data.seq);
      });
      await bus.publishMany('order.created', orders(200), { key: (o) => o.orderId });
      // Delayed delivery: the scheduling script, the schedule counter (INCR) and the mover's GET and scripts.
      await bus.publish('order.created', order(200), { delayMs: 100 });
      await waitFor(() => handled.has(200), 15_000, 'the delayed event');
      await bus.idle({ timeoutMs: 15_000 });
      expect(handled.size).toBe(200);
      const admin = await (bus.transport as RedisStreamsTransport).admin();
      expect((await admin.deadLetters('order.created', 'g')).map((d) => d.event?.data)).toEqual([order(7)]);
      expect((await admin.groups('order.created')).map((g) => [g.group, g.lagEvents, g.pendingEvents])).toEqual([['g', 0, 0]]);
      expect(await admin.listStreams()).toHaveLength(6);
      expect(await admin.purgeDeadLetters('order.created', { group: 'g' })).toBe(1);
    } finally {
      await bus.close();
    }
    for (const s of cluster().servers) {
      expect(await withRedis(s.port, (c) => c.call('ACL', 'LOG')), `ACL LOG of port ${s.port}`).toEqual([]);
    }
    expect(logger.lines.filter((l) => (l.level === 'warn' || l.level === 'error') && !handlerWarnings.includes(l.msg))).toEqual([]);
  });
});
