/** The examples run as their headers print them, against harness servers (standalone and Cluster). */
import { execFileSync, spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { availableParallelism } from 'node:os';
import { resolve } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { RedisCluster } from '../helpers/redis-cluster.js';
import { RedisServer, uniquePrefix } from '../helpers/redis-server.js';
import { waitFor } from '../helpers/wait.js';

const root = resolve(__dirname, '../..');
const tsx = resolve(root, 'node_modules/.bin/tsx');

/** Runs an example to its end; resolves with its stdout (throws on a non-zero exit). */
function runExample(file: string, env: Record<string, string> = {}): string {
  return execFileSync(tsx, [`examples/${file}`], { cwd: root, encoding: 'utf8', timeout: 60_000, env: { ...process.env, ...env } });
}

/** A long-running example: its output so far, and its exit code once it has exited. */
interface Running {
  child: ChildProcessWithoutNullStreams;
  out(): string;
  err(): string;
  exited: Promise<number | null>;
}

function startExample(file: string, env: Record<string, string>): Running {
  const child = spawn(tsx, [`examples/${file}`], { cwd: root, env: { ...process.env, ...env } });
  let out = '';
  let err = '';
  child.stdout.on('data', (d: Buffer) => (out += d.toString()));
  child.stderr.on('data', (d: Buffer) => (err += d.toString()));
  const exited = new Promise<number | null>((resolve) => child.on('exit', resolve));
  return { child, out: () => out, err: () => err, exited };
}

describe('examples', () => {
  it('quickstart publishes, rejects a bad payload, consumes 1000 events and closes', () => {
    const out = runExample('quickstart.ts');
    expect(out).toContain('rejected before sending');
    expect(out).toContain('billing handled 1000 events; bus closed cleanly');
  });

  // Pinned where the process may use 2+ CPUs (this machine), else one unpinned worker.
  const pinnedLine = availableParallelism() >= 2 ? /^publisher on CPU \d+, \d worker\(s\) on CPU\(s\) [\d,]+$/m : /^1 worker\(s\), threads not pinned/m;
  it.each([
    ['the addon', {}, new RegExp(`^native core: native\\n${pinnedLine.source.slice(1)}`, 'm')],
    ['the JS fallback', { EVENTLANE_NATIVE: '0' }, /^native core: js\n1 worker\(s\), threads not pinned/m],
  ])('native workers (%s): every trade handled in worker threads, a broken handler module rejected, closes', (_, env, start) => {
    const out = runExample('native-workers.ts', env);
    expect(out).toMatch(start);
    // tryPublish never waits: when the workers have not yet made room in the rings it sends nothing, and says so.
    const tried = out.includes('the rings were full: tryPublish sent nothing') ? '100000 trades, 10000000 shares' : '100001 trades, 10000005 shares';
    expect(out).toContain(`workers handled ${tried}`);
    expect(out).toContain('a handler module that cannot load: ConfigError naming handler');
    expect(out).toContain('bus closed cleanly');
  });

  describe('against redis-server', () => {
    let server: { url: string; stop(): Promise<void> };
    beforeAll(async () => {
      server = await RedisServer.startOrExternal();
    });
    afterAll(async () => {
      await server?.stop();
    });

    it('quickstart on Redis runs twice in a row, each run on its own keys', () => {
      for (let run = 1; run <= 2; run++) {
        const out = runExample('quickstart.ts', { EVENTLANE_TRANSPORT: 'redis-streams', REDIS_URL: server.url });
        expect(out).toContain('rejected before sending');
        expect(out).toContain('billing handled 1000 events; bus closed cleanly');
      }
    });

    it('swap-transports: the same service code gives the same result on memory, native and redis-streams', () => {
      const out = runExample('swap-transports.ts', { REDIS_URL: server.url });
      expect(out).toBe(['memory', 'native', 'redis-streams'].map((t) => `${t}: consumed 125250 cents\n`).join(''));
    });

    it('graceful-shutdown: SIGTERM mid-stream finishes the running jobs; after a restart every job is done exactly once', async () => {
      const env = { REDIS_URL: server.url, EXAMPLE_PREFIX: uniquePrefix('example-shutdown'), JOBS: '400' }; // 5 s of work at 4 jobs at once
      const first = startExample('graceful-shutdown.ts', env);
      const done = (r: Running) => r.out().match(/^done \S+$/gm) ?? [];
      try {
        await waitFor(() => done(first).length >= 20, 30_000, 'the first jobs to be done');
      } finally {
        first.child.kill('SIGTERM');
      }
      expect(await first.exited).toBe(0);
      expect(first.out()).toContain('SIGTERM: finishing the jobs in progress\n');
      expect(first.out()).toMatch(/closed; the jobs not started stay queued for the next run\n$/);
      expect(done(first).length).toBeLessThan(400); // stopped mid-stream

      const second = startExample('graceful-shutdown.ts', { ...env, JOBS: '0' });
      try {
        await waitFor(() => done(first).length + done(second).length >= 400, 30_000, 'the rest of the jobs after the restart');
        await new Promise((r) => setTimeout(r, 1500)); // past minIdleMs: any job handed out twice would show now
      } finally {
        second.child.kill('SIGTERM');
      }
      expect(await second.exited).toBe(0);
      expect(done(second).length).toBeGreaterThan(0);
      const all = [...done(first), ...done(second)];
      expect(all).toHaveLength(400);
      expect(new Set(all).size).toBe(400);
      expect(first.err() + second.err()).toBe('');
    }, 60_000);

    it('consumer-group: two groups get every order, the poison order is dead-lettered, inspected and purged', () => {
      const out = runExample('consumer-group.ts', { REDIS_URL: server.url });
      expect(out).toContain('billing handled 99, shipping handled 100');
      expect(out).toMatch(/^group billing: pending \d+, lag \d+, retrying \d+$/m);
      expect(out).toMatch(/^group shipping: pending \d+, lag \d+, retrying \d+$/m);
      expect(out).toMatch(/^DLQ: \{"orderId":"o-13","amount":23\} after 3 attempts: Error: card declined \(attempt 3\)$/m);
      expect(out).toContain('purged 1 dead letter(s)');
    });

    it('observability: serves /metrics and /healthz, prints spans, logs the dead letter with no logger set, and shuts down on SIGTERM', async () => {
      const child = spawn(tsx, ['examples/observability.ts'], { cwd: root, env: { ...process.env, REDIS_URL: server.url, PORT: '0' } });
      let out = '';
      let err = '';
      child.stdout.on('data', (d: Buffer) => (out += d.toString()));
      child.stderr.on('data', (d: Buffer) => (err += d.toString()));
      const exited = new Promise<number | null>((resolve) => child.on('exit', resolve));
      try {
        await waitFor(() => /listening on (http:\/\/[\d.:]+)/.test(out), 30_000, 'the example to listen');
        const base = /listening on (http:\/\/[\d.:]+)/.exec(out)![1]!;
        const scrape = async () => (await fetch(`${base}/metrics`)).text();
        await waitFor(async () => /outcome="dead_letter"} 1$/m.test(await scrape()), 30_000, 'the dead letter in the metrics');
        const metrics = await scrape();
        expect(metrics).toMatch(/^eventlane_events_published_total\{type="order.placed"\} 20$/m);
        expect(metrics).toMatch(/^eventlane_events_processed_total\{type="order.placed",group="billing",outcome="ack"\} 19$/m);
        expect(metrics).toMatch(/^eventlane_group_lag_events\{type="order.placed",group="billing"\} 0$/m);
        const health = await fetch(`${base}/healthz`);
        expect(health.status).toBe(200);
        expect(await health.json()).toMatchObject({ ok: true, transport: { type: 'redis-streams', connected: true }, subscriptions: [{ group: 'billing', state: 'running' }] });
        await waitFor(() => out.includes("name: 'process order.placed'"), 10_000, 'process spans on stdout');
        expect(out).toContain("name: 'send order.placed'");
        const dead = err.split('\n').find((l) => l.includes('"msg":"event dead-lettered"'));
        expect(dead).toMatch(/card declined for o-7/);
        expect(dead).toMatch(/observability\.ts/);
      } finally {
        child.kill('SIGTERM');
      }
      expect(await exited).toBe(0);
      expect(out).toContain('closed');
    });
  });

  describe('against a Redis Cluster', () => {
    let cluster: RedisCluster;
    beforeAll(async () => {
      cluster = await RedisCluster.start(3, 0);
    }, 120_000);
    afterAll(async () => {
      await cluster?.stop();
    });

    it('redis-cluster: keyed orders stay in order per customer, the partitions spread over the masters', () => {
      const out = runExample('redis-cluster.ts', { REDIS_CLUSTER_NODES: cluster.nodes.map((n) => `${n.host}:${n.port}`).join(',') });
      expect(out).toContain('handled 600 orders, 0 out of order per customer');
      expect(out.match(/^example-cluster-\S+:\{order\.created:\d\}: \d+ entries, slot \d+ on 127\.0\.0\.1:\d+$/gm)).toHaveLength(6);
      expect(out).toMatch(/^[23] master\(s\) hold the partitions$/m);
    });
  });
});
