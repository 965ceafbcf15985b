/**
 * The test harness itself: a redis-server it started does not outlive a test process that is killed
 * (SIGKILL: no 'exit' handler runs), so an aborted or timed-out run leaves no servers behind; a server
 * that cannot listen is reported at once, with the reason from its log, not after a 10-second poll.
 */
import { spawn } from 'node:child_process';
import { createServer, type Server } from 'node:net';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { expect, it } from 'vitest';
import { CLUSTER_BUS_OFFSET, endProcess, freeClusterPort, freePort, RedisServer, ServerExitedError, spawnRedis, waitStarted } from '../helpers/redis-server.js';
import { waitFor } from '../helpers/wait.js';

const FIXTURE = fileURLToPath(new URL('../helpers/fixtures/start-redis.ts', import.meta.url));

/** Whether `pid` is a live process (not gone, not a zombie waiting to be reaped). */
function alive(pid: number): boolean {
  try {
    return !/^\d+ \(.*\) Z/.test(readFileSync(`/proc/${pid}/stat`, 'utf8'));
  } catch {
    return false;
  }
}

it('a server started by a test process that is killed with SIGKILL dies with it', async () => {
  const child = spawn(process.execPath, ['--import', 'tsx', FIXTURE], { stdio: ['ignore', 'pipe', 'inherit'] });
  const pid = await new Promise<number>((resolve, reject) => {
    let out = '';
    child.stdout!.on('data', (d: Buffer) => {
      out += d.toString();
      if (out.includes('\n')) resolve(Number(out.trim()));
    });
    child.once('exit', (code) => reject(new Error(`fixture exited (${code}) before starting a server`)));
  });
  expect(pid).toBeGreaterThan(0);
  expect(readFileSync(`/proc/${pid}/comm`, 'utf8').trim()).toBe('redis-server');
  expect(alive(pid)).toBe(true);
  child.kill('SIGKILL');
  await waitFor(() => !alive(pid), 5_000, 'the orphaned redis-server to die');
}, 20_000);

/** A loopback listener on `port`, closed by the caller. */
function hold(port: number): Promise<Server> {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.once('error', reject);
    srv.listen(port, '127.0.0.1', () => resolve(srv));
  });
}

/** What waitStarted does for a server that cannot listen: rejects (and how long it took), or resolves. */
async function startOn(port: number, args: string[]): Promise<{ err: unknown; ms: number }> {
  const proc = spawnRedis(['--port', String(port), '--bind', '127.0.0.1', '--save', '', ...args]);
  const t0 = Date.now();
  const err = await waitStarted(proc, port).then(
    () => undefined,
    (e: unknown) => e,
  );
  await endProcess(proc, 'SIGKILL');
  return { err, ms: Date.now() - t0 };
}

it('a server whose port is taken is reported at once as ServerExitedError with its log line, not polled for 10 s', async () => {
  const port = await freePort();
  const held = await hold(port);
  try {
    const { err, ms } = await startOn(port, []);
    expect(err).toBeInstanceOf(ServerExitedError);
    expect((err as ServerExitedError).addressInUse).toBe(true);
    expect((err as Error).message).toMatch(new RegExp(`port ${port} exited .*Address already in use`));
    expect(ms).toBeLessThan(5_000);
  } finally {
    held.close();
  }
});

it('a cluster node whose bus port (port + 10,000) is taken fails the same way; freeClusterPort picks ports whose bus port is free', async () => {
  const port = await freeClusterPort();
  const bus = await hold(port + CLUSTER_BUS_OFFSET);
  try {
    const dir = mkdtempSync(join(tmpdir(), 'eventlane-harness-'));
    const { err } = await startOn(port, ['--cluster-enabled', 'yes', '--cluster-config-file', 'nodes.conf', '--dir', dir]).finally(() => rmSync(dir, { recursive: true, force: true }));
    // Reported as an address in use at once, not as a server never ready after waitReady's timeout.
    expect((err as ServerExitedError).addressInUse).toBe(true);
  } finally {
    bus.close();
  }
  const node = await RedisServer.start({ extraArgs: ['--cluster-enabled', 'yes', '--cluster-config-file', 'nodes.conf'] });
  try {
    expect(node.alive).toBe(true);
    expect(node.port + CLUSTER_BUS_OFFSET).toBeLessThanOrEqual(65_535);
  } finally {
    await node.stop();
  }
});
