/**
 * The `eventlane-redis` operations CLI, run as a real process (ops-bin.ts through tsx) against a real
 * redis-server that a bus and a consumer group have filled: streams, groups, pending, dead letters
 * listed, replayed and purged; bad usage and an unreachable Redis fail with clear messages.
 */
import { execFile } from 'node:child_process';
import { resolve } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { EventBus } from '../../src/index.js';
import { freePort, RedisServer, uniquePrefix } from '../helpers/redis-server.js';
import { waitFor } from '../helpers/wait.js';
import { Redis } from 'ioredis';
import { dlqKey, openRedisStreamsAdmin, retryKey, streamKey } from '../../transports/redis-streams/index.js';
import { events, fastRead, fastRetry, makeBus, order, orders } from './redis-common.js';

const root = resolve(__dirname, '../..');
const bin = resolve(root, 'transports/redis-streams/ops-bin.ts');

function cli(...args: string[]): Promise<{ code: number; out: string; err: string }> {
  return new Promise((done) => {
    execFile(process.execPath, ['--import', 'tsx', bin, ...args], { cwd: root, env: { ...process.env, REDIS_URL: '' } }, (error, out, err) => {
      done({ code: error ? Number((error as { code?: number }).code ?? 1) : 0, out, err });
    });
  });
}

let server: { url: string; stop(): Promise<void> };
let bus: EventBus<typeof events>;
const prefix = uniquePrefix('opscli');
const deliveries = new Map<number, number>();
let conn: string[];

beforeAll(async () => {
  server = await RedisServer.startOrExternal();
  conn = ['--url', server.url, '--prefix', prefix];
  bus = await makeBus(server.url, { partitions: 3 }, prefix);
  // Events 5 and 7 always fail: after 2 attempts each is dead-lettered; the rest are handled once.
  await bus.subscribe('order.created', { group: 'billing', maxDeliveries: 2, ...fastRetry, ...fastRead }, (e) => {
    deliveries.set(e.data.seq, (deliveries.get(e.data.seq) ?? 0) + 1);
    if (e.data.seq === 5 || e.data.seq === 7) throw new Error(`poison ${e.data.seq}`);
  });
  await bus.publishMany('order.created', orders(30), { key: (o) => o.orderId });
  await waitFor(async () => (await bus.deadLetters('order.created', { group: 'billing' })).length === 2, 15_000, 'two dead letters');
}, 60_000);

afterAll(async () => {
  await bus?.close();
  await server?.stop();
});

describe('eventlane-redis (operations CLI)', () => {
  it('lists the partition streams and the groups, finding the partition count by itself', async () => {
    const streams = await cli('streams', ...conn, '--json');
    expect(streams.code, streams.err).toBe(0);
    const list = JSON.parse(streams.out) as { type: string; partition: number; length: number }[];
    expect(list.map((s) => [s.type, s.partition])).toEqual([
      ['order.created', 0],
      ['order.created', 1],
      ['order.created', 2],
    ]);
    expect(list.reduce((n, s) => n + s.length, 0)).toBeGreaterThan(0);

    await waitFor(async () => (await cli('groups', 'order.created', ...conn, '--json')).out.includes('"pending": 0'), 10_000, 'nothing pending');
    const groups = JSON.parse((await cli('groups', 'order.created', ...conn, '--json')).out);
    expect(groups).toEqual([{ group: 'billing', consumers: 1, pending: 0, lag: 0, trimmed: 0, retrying: 0, caughtUp: true, lagEvents: 0, pendingEvents: 0, estimated: false }]);

    // The headings say which counts are stream entries and which are events.
    const text = await cli('groups', 'order.created', ...conn);
    expect(text.out).toMatch(
      /^group\s+consumers\s+pending\(entries\)\s+lag\(entries\)\s+trimmed\(entries\)\s+retrying\(events\)\s+lag\(events\)\s+pending\(events\)\nbilling\s+1\s+0\s+0\s+0\s+0\s+0\s+0\n$/,
    );
    const pending = await cli('pending', 'order.created', 'billing', ...conn);
    expect(pending.code, pending.err).toBe(0);
    expect(pending.out).toBe('0 pending entries\n(none)\n');
  });

  it('shows dead letters, replays one to its group and purges the rest', async () => {
    const listed = await cli('dlq', 'order.created', ...conn, '--json');
    expect(listed.code, listed.err).toBe(0);
    const letters = JSON.parse(listed.out) as { id: string; dlqId: string; group: string; attempts: number; error: string; event: { data: { seq: number } } }[];
    expect(letters.map((d) => d.event.data.seq).sort()).toEqual([5, 7]);
    for (const d of letters) expect(d).toMatchObject({ group: 'billing', attempts: 2, error: expect.stringContaining('poison') });
    const table = await cli('dlq', 'order.created', ...conn, '--group', 'billing');
    expect(table.out.split('\n')[0]).toMatch(/^ref\s+group\s+eventId\s+attempts\s+deadAt\s+error$/);
    expect(table.out).toContain('poison 5');
    expect(table.out).not.toContain('there may be more');
    const one = await cli('dlq', 'order.created', ...conn, '--limit', '1');
    expect(one.out.trimEnd().split('\n').at(-1)).toBe('(the oldest 1; there may be more: --limit)');

    // Purge without a filter is refused: nothing deleted.
    const refused = await cli('purge', 'order.created', ...conn);
    expect(refused.code).toBe(2);
    expect(refused.err).toContain('--all');
    expect(await bus.deadLetters('order.created')).toHaveLength(2);

    const five = letters.find((d) => d.event.data.seq === 5)!;
    const replayed = await cli('replay', 'order.created', ...conn, '--id', five.id);
    expect(replayed.code, replayed.err).toBe(0);
    expect(replayed.out).toBe('replayed 1 dead letter\n');
    // Replayed into the group's retry stream: two more attempts, then dead again.
    await waitFor(() => deliveries.get(5) === 4, 10_000, 'event 5 attempted again');
    await waitFor(async () => (await bus.deadLetters('order.created')).length === 2, 10_000, 'event 5 dead again');
    expect(deliveries.get(7)).toBe(2);

    const purged = await cli('purge', 'order.created', ...conn, '--all', '--json');
    expect(purged.code, purged.err).toBe(0);
    expect(JSON.parse(purged.out)).toEqual({ purged: 2 });
    expect(await bus.deadLetters('order.created')).toHaveLength(0);
    for (let seq = 0; seq < 30; seq++) expect(deliveries.get(seq), `deliveries of ${seq}`).toBe(seq === 5 ? 4 : seq === 7 ? 2 : 1);
  });

  it('a ref names one dead letter where two partitions hold DLQ entries with the same id', async () => {
    const p = uniquePrefix('opsref');
    const raw = new Redis(server.url);
    try {
      const letter = (seq: number, partition: number) => [
        'type',
        'order.created',
        'group',
        'billing',
        'partition',
        String(partition),
        'attempts',
        '3',
        'error',
        `boom ${seq}`,
        'deadAt',
        '1700000000000',
        'event',
        JSON.stringify({ id: `ev-${seq}`, type: 'order.created', source: 'x', time: 1, data: order(seq) }),
      ];
      for (const partition of [0, 1]) {
        await raw.xadd(streamKey(p, 'order.created', partition), '*', 'v', '1', 'data', '{}');
        await raw.xadd(dlqKey(p, 'order.created', partition), '1700000000000-0', ...letter(partition, partition));
      }
      const listed = await cli('dlq', 'order.created', '--url', server.url, '--prefix', p, '--json');
      const refs = (JSON.parse(listed.out) as { ref: string }[]).map((d) => d.ref).sort();
      expect(refs).toEqual(['0/1700000000000-0', '1/1700000000000-0']);
      // A bare DLQ entry id is both partitions' letter: it picks neither (it must not purge both).
      const bare = await cli('purge', 'order.created', '--url', server.url, '--prefix', p, '--id', '1700000000000-0');
      expect(bare.out).toBe('purged 0 dead letters\n');
      const purged = await cli('purge', 'order.created', '--url', server.url, '--prefix', p, '--id', '1/1700000000000-0');
      expect(purged.out).toBe('purged 1 dead letter\n');
      expect(await raw.xlen(dlqKey(p, 'order.created', 0))).toBe(1);
      expect(await raw.xlen(dlqKey(p, 'order.created', 1))).toBe(0);
      // By event id: that event's letter only.
      expect((await cli('purge', 'order.created', '--url', server.url, '--prefix', p, '--id', 'ev-0')).out).toBe('purged 1 dead letter\n');
      expect(await raw.xlen(dlqKey(p, 'order.created', 0))).toBe(0);
    } finally {
      raw.disconnect();
    }
  });

  it('dlq --json prints a dead letter whose event nests deeper than JSON.stringify recurses (compact)', async () => {
    const p = uniquePrefix('opsdeep');
    const raw = new Redis(server.url);
    try {
      const data = `${'['.repeat(100_000)}${']'.repeat(100_000)}`;
      const event = `{"id":"e1","type":"order.created","source":"x","time":1,"data":${data}}`;
      await raw.xadd(
        dlqKey(p, 'order.created', 0),
        '*',
        'v',
        '1',
        'kind',
        'dead',
        'type',
        'order.created',
        'group',
        'billing',
        'partition',
        '0',
        'attempts',
        '1',
        'error',
        'deep',
        'deadAt',
        '1700000000000',
        'event',
        event,
      );
      const listed = await cli('dlq', 'order.created', '--url', server.url, '--prefix', p, '--json');
      expect(listed.code, listed.err).toBe(0);
      expect(listed.out).toContain(`"data":${data}`);
      const table = await cli('dlq', 'order.created', '--url', server.url, '--prefix', p);
      expect(table.out).toMatch(/billing\s+e1\s+1\s/);
    } finally {
      raw.disconnect();
    }
  });

  it('letters and keys written by others: another key under the prefix, a letter naming another partition or no group, an odd deadAt, a multi-line error; a prefix with glob characters', async () => {
    const p = `${uniquePrefix('opsodd')}[1]`;
    const conn2 = ['--url', server.url, '--prefix', p];
    const raw = new Redis(server.url);
    try {
      const letter = (id: string, fields: Record<string, string>) => {
        const f = {
          type: 'order.created',
          group: 'billing',
          partition: '0',
          attempts: '3',
          error: 'boom',
          deadAt: '1700000000000',
          event: JSON.stringify({ id, type: 'order.created', source: 'x', time: 1, data: order(1) }),
          ...fields,
        };
        return Object.entries(f)
          .flat()
          .filter((v, i, a) => i % 2 === 1 || a[i + 1] !== undefined);
      };
      for (const partition of [0, 1]) {
        await raw.xadd(streamKey(p, 'order.created', partition), '*', 'v', '1', 'data', '{}');
        await raw.xgroup('CREATE', streamKey(p, 'order.created', partition), 'billing', '0');
      }
      await raw.set(`${p}:{user:42}`, 'not a stream'); // an app's own key of the same shape
      const dlq1 = dlqKey(p, 'order.created', 1);
      await raw.xadd(dlq1, '*', ...letter('ev-other-partition', { partition: '0' })); // its field names partition 0
      await raw.xadd(dlq1, '*', ...letter('ev-no-group', { group: '' }));
      await raw.xadd(dlq1, '*', ...letter('ev-gone-group', { group: 'shipping' }));
      await raw.xadd(dlq1, '*', ...letter('ev-odd', { deadAt: 'yesterday', error: 'ZodError: [\n  {\n    "code": "invalid_type"\n  }\n]' }));
      await raw.xadd(dlq1, '*', ...letter('ev-garbled', { event: '{"id": "ev-garbled", trunc' })); // not JSON

      // 'streams' (and every command counting partitions from it) skips the app's other key instead of failing
      // with WRONGTYPE, and finds the streams whatever glob characters the prefix holds.
      const streams = await cli('streams', ...conn2, '--json');
      expect(streams.code, streams.err).toBe(0);
      expect((JSON.parse(streams.out) as { partition: number }[]).map((x) => x.partition)).toEqual([0, 1]);
      const table = await cli('dlq', 'order.created', ...conn2);
      expect(table.code, table.err).toBe(0);
      const lines = table.out.trimEnd().split('\n');
      expect(lines).toHaveLength(6); // header + 5 letters, one line each
      const odd = lines.find((l) => l.includes('ev-odd'))!;
      expect(odd).toMatch(/\s-\s+ZodError: \[ \{ "code": "invalid_type" \} \]$/);

      // Replay: only the letter whose group exists; it goes to partition 1's retry stream, where it was read.
      const replayed = await cli('replay', 'order.created', ...conn2);
      // ev-other-partition and ev-odd (billing); what it left, and why, is said, not only "replayed 2".
      expect(replayed.out).toBe('replayed 2 dead letters; left in the DLQ: 1 undecodable (inspect with dlq, then purge --id <ref>), 1 naming no group, 1 whose group the stream no longer has\n');
      expect(JSON.parse((await cli('replay', 'order.created', ...conn2, '--json')).out)).toEqual({ replayed: 0, skipped: { undecodable: 1, 'no-group': 1, 'group-gone': 1 } });
      expect(await raw.xlen(retryKey(p, 'order.created', 1, 'billing'))).toBe(2);
      expect(await raw.xlen(retryKey(p, 'order.created', 0, 'billing'))).toBe(0);
      expect(await raw.exists(retryKey(p, 'order.created', 1, ''), retryKey(p, 'order.created', 1, 'shipping'))).toBe(0);
      const left = JSON.parse((await cli('dlq', 'order.created', ...conn2, '--json')).out) as { id: string; partition: number }[];
      expect(
        left
          .filter((d) => d.id.startsWith('ev-'))
          .map((d) => [d.id, d.partition])
          .sort(),
      ).toEqual([
        ['ev-gone-group', 1],
        ['ev-no-group', 1],
      ]);
      expect(left).toHaveLength(3);
      // A second run replays nothing again (the letter naming the other partition does not go again on every run).
      expect((await cli('replay', 'order.created', ...conn2)).out).toMatch(/^replayed 0 dead letters; left in the DLQ: /);
      expect((await cli('purge', 'order.created', ...conn2, '--all')).out).toBe('purged 3 dead letters\n');
      expect(await raw.xlen(dlq1)).toBe(0);
    } finally {
      raw.disconnect();
    }
  });

  it('admin deadLetters refuses a limit below 1 with a ConfigError; an admin used after close() says so (ClosedError)', async () => {
    const { admin, close } = await openRedisStreamsAdmin({ url: server.url, prefix });
    try {
      for (const limit of [0, -1, 2.5]) await expect(admin.deadLetters('order.created', undefined, limit)).rejects.toMatchObject({ code: 'ERR_CONFIG', message: expect.stringContaining('limit') });
    } finally {
      await close();
    }
    // A ClosedError, not a ConnectionError about a closed connection's SCAN.
    await expect(admin.listStreams()).rejects.toMatchObject({ code: 'ERR_CLOSED' });
  });

  it('bad usage exits 2 with a message naming what is wrong', async () => {
    const unknown = await cli('frobnicate', ...conn);
    expect(unknown.code).toBe(2);
    expect(unknown.err).toContain('Unknown command "frobnicate"');
    const zero = await cli('groups', 'order.created', ...conn, '--partitions', '0');
    expect(zero.code).toBe(2);
    expect(zero.err).toContain('--partitions must be an integer from 1 to 4,096');
    // A usage error (exit 2), checked here rather than passed on to Redis to refuse.
    const huge = await cli('dlq', 'order.created', ...conn, '--limit', '99999999999999999999');
    expect(huge.code).toBe(2);
    expect(huge.err).toContain('--limit must be an integer from 1 to 1,000,000');
    const option = await cli('streams', ...conn, '--colour');
    expect(option.code).toBe(2);
    expect(option.err).toContain("'--colour'");
    // A flag the command does not read is refused, not ignored (`replay --all` would replay what replay does anyway).
    const stray = await cli('replay', 'order.created', ...conn, '--all', '--limit', '5');
    expect(stray.code).toBe(2);
    expect(stray.err).toContain('--all, --limit do not apply to "replay" (it takes --partitions, --group, --id)');
    expect((await cli('streams', ...conn, '--group', 'g')).err).toContain('--group does not apply to "streams" (it takes only the connection options)');
    const missing = await cli('pending', 'order.created', ...conn);
    expect(missing.code).toBe(2);
    expect(missing.err).toContain('"pending" needs a group');
    const prefixErr = await cli('streams', '--url', server.url, '--prefix', 'a b');
    expect(prefixErr.code).toBe(2);
    // It names the flag, not the transport option the CLI sets from it.
    expect(prefixErr.err).toContain('--prefix');
    expect(prefixErr.err).not.toContain('transport.');
    const badUrl = await cli('streams', '--url', 'http://nowhere');
    expect(badUrl.code).toBe(2);
    expect(badUrl.err).toContain('--url (or $REDIS_URL)');
    expect(badUrl.err).not.toContain('transport.');
    const help = await cli('--help');
    expect(help.code).toBe(0);
    expect(help.out).toContain('Usage: eventlane-redis <command>');
  });

  it('an unreachable Redis fails within the timeout, naming the URL', async () => {
    const url = `redis://127.0.0.1:${await freePort()}`;
    const started = Date.now();
    const r = await cli('streams', '--url', url, '--timeout-ms', '500');
    expect(r.code).toBe(1);
    expect(r.err).toContain(url);
    expect(r.err).toContain('[ERR_CONNECTION]');
    // It names the CLI's flag, not the transport option the CLI sets from it.
    expect(r.err).toContain('within 500 ms (--timeout-ms)');
    expect(r.err).not.toContain('transport.');
    expect(Date.now() - started).toBeLessThan(10_000);
  });

  it('refused credentials name --url, where the CLI takes them', async () => {
    const url = new URL(server.url);
    [url.username, url.password] = ['nobody', 'wrong-pass'];
    const r = await cli('streams', '--url', url.toString(), '--timeout-ms', '5000');
    expect(r.code).toBe(1);
    expect(r.err).toContain('refused the credentials (the user and password in --url (or $REDIS_URL))');
    expect(r.err).not.toContain('transport.');
    expect(r.err).not.toContain('wrong-pass');
  });

  it('--cluster given a standalone server is bad usage, at once, pointing at --url', async () => {
    const r = await cli('streams', '--cluster', new URL(server.url).host, '--timeout-ms', '5000');
    expect(r.code).toBe(2);
    expect(r.err).toContain('is not a Redis Cluster (ERR This instance has cluster support disabled): connect with --url instead of --cluster [ERR_CONFIG]');
  });

  it('partitions shows and raises the recorded count; the running bus follows, and lowering is bad usage', async () => {
    const shown = await cli('partitions', 'order.created', ...conn);
    expect(shown).toMatchObject({ code: 0, out: 'order.created: 3 partitions\n' });
    const raised = await cli('partitions', 'order.created', '5', ...conn, '--json');
    expect(raised.code).toBe(0);
    expect(JSON.parse(raised.out)).toEqual({ type: 'order.created', from: 3, partitions: 5 });
    const lower = await cli('partitions', 'order.created', '2', ...conn);
    expect(lower.code).toBe(2);
    expect(lower.err).toContain('Cannot lower the partitions of "order.created" from 5 to 2');
    const bad = await cli('partitions', 'order.created', 'many', ...conn);
    expect(bad).toMatchObject({ code: 2 });
    expect(bad.err).toContain('"partitions" takes a count from 1 to 4,096, got "many"');
    // The bus's subscription reads the record at its reclaim cadence (fastRead: every 500 ms).
    await waitFor(() => bus.transport.partitionsFor('order.created') === 5, 5_000, 'the bus to follow the raise');
    const seen = new Set<number>();
    await bus.subscribe('order.created', { group: 'raised', startFrom: '0', ...fastRead }, (e) => void seen.add(e.data.seq));
    await bus.publishMany('order.created', orders(20, 1000));
    await waitFor(() => [...Array(20).keys()].every((i) => seen.has(1000 + i)), 10_000, 'the events published over 5 partitions');
    const groups = await cli('groups', 'order.created', ...conn, '--json');
    expect((JSON.parse(groups.out) as { group: string }[]).map((g) => g.group)).toContain('raised');
  });
});
