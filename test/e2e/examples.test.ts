/** The README's examples run as written. */
import { execFileSync, spawn } from 'node:child_process';
import { availableParallelism } from 'node:os';
import { resolve } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { RedisServer } from '../helpers/redis-server.js';
import { waitFor } from '../helpers/wait.js';

const root = resolve(__dirname, '../..');
const tsx = resolve(root, 'node_modules/.bin/tsx');

describe('examples', () => {
  it('quickstart publishes, rejects a bad payload, consumes 1000 events and closes', () => {
    const out = execFileSync(tsx, ['examples/quickstart.ts'], { cwd: root, encoding: 'utf8', timeout: 60_000 });
    expect(out).toContain('rejected before sending');
    expect(out).toContain('billing handled 1000 events; bus closed cleanly');
  });

  // Pinned where the process may use 2+ CPUs (this machine), else one unpinned worker.
  const pinnedLine = availableParallelism() >= 2 ? /^publisher on CPU \d+, \d worker\(s\) on CPU\(s\) [\d,]+$/m : /^1 worker\(s\), threads not pinned/m;
  it.each([
    ['the addon', {}, new RegExp(`^native core: native\\n${pinnedLine.source.slice(1)}`, 'm')],
    ['the JS fallback', { EVENTLANE_NATIVE: '0' }, /^native core: js\n1 worker\(s\), threads not pinned/m],
  ])('native workers (%s): every trade handled in worker threads, a broken handler module rejected, closes', (_, env, start) => {
    const out = execFileSync(tsx, ['examples/native-workers.ts'], { cwd: root, encoding: 'utf8', timeout: 60_000, env: { ...process.env, ...env } });
    expect(out).toMatch(start);
    expect(out).toContain('workers handled 100001 trades, 10000005 shares');
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

    it('consumer-group: two groups get every order, the poison order is dead-lettered, inspected and purged', () => {
      const out = execFileSync(tsx, ['examples/consumer-group.ts'], { cwd: root, encoding: 'utf8', timeout: 60_000, env: { ...process.env, REDIS_URL: server.url } });
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
});
