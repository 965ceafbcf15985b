/**
 * Test harness: starts real `redis-server` processes on free loopback ports and stops them.
 * No mocks. `REDIS_URL` may point at an existing server instead (standalone tests only; tests that
 * restart or kill the server always start their own).
 */
import { spawn, execFile, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { Redis } from 'ioredis';

const run = promisify(execFile);

export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.unref();
    srv.on('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const addr = srv.address();
      const port = typeof addr === 'object' && addr ? addr.port : 0;
      srv.close(() => resolve(port));
    });
  });
}

async function waitReady(port: number, timeoutMs = 10_000, check?: (c: Redis) => Promise<boolean>): Promise<void> {
  const until = Date.now() + timeoutMs;
  let last: unknown;
  while (Date.now() < until) {
    const c = new Redis({ host: '127.0.0.1', port, lazyConnect: true, maxRetriesPerRequest: 0, retryStrategy: () => null, enableOfflineQueue: false, enableReadyCheck: false });
    c.on('error', () => undefined);
    try {
      await c.connect();
      if ((await c.ping()) === 'PONG' && (!check || (await check(c)))) {
        c.disconnect();
        return;
      }
    } catch (err) {
      last = err;
      if (String(err).includes('NOAUTH') && !check) {
        c.disconnect();
        return; // up, and asking for a password
      }
    }
    c.disconnect();
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error(`redis-server on port ${port} not ready after ${timeoutMs} ms: ${String(last)}`);
}

export interface ServerOptions {
  /** Append-only file (`--appendonly yes --appendfsync always`) in the server's temp dir. */
  aof?: boolean;
  extraArgs?: string[];
}

/** One redis-server process. */
export class RedisServer {
  private proc: ChildProcess | undefined;
  readonly dir: string;
  private constructor(
    readonly port: number,
    private readonly args: string[],
    dir: string,
    private readonly owned: boolean,
  ) {
    this.dir = dir;
  }

  get url(): string {
    return `redis://127.0.0.1:${this.port}`;
  }

  static async start(options: ServerOptions = {}): Promise<RedisServer> {
    const port = await freePort();
    const dir = mkdtempSync(join(tmpdir(), 'eventlane-redis-'));
    const args = ['--port', String(port), '--bind', '127.0.0.1', '--dir', dir, '--save', '', '--protected-mode', 'no'];
    if (options.aof) args.push('--appendonly', 'yes', '--appendfsync', 'always');
    else args.push('--appendonly', 'no');
    args.push(...(options.extraArgs ?? []));
    const s = new RedisServer(port, args, dir, true);
    await s.spawn();
    return s;
  }

  /** `REDIS_URL` when set (not owned: never stopped), else a fresh server. */
  static async startOrExternal(): Promise<RedisServer | { url: string; stop(): Promise<void> }> {
    const ext = process.env['REDIS_URL'];
    if (ext) return { url: ext, stop: async () => undefined };
    return RedisServer.start();
  }

  private async spawn(): Promise<void> {
    this.proc = spawn('redis-server', this.args, { stdio: 'ignore' });
    this.proc.on('error', () => undefined);
    try {
      await waitReady(this.port);
    } catch (err) {
      this.proc.kill('SIGKILL');
      rmSync(this.dir, { recursive: true, force: true });
      throw err;
    }
  }

  /** SIGKILL-free stop: SHUTDOWN-like SIGTERM, then wait for exit. */
  private async kill(signal: NodeJS.Signals = 'SIGTERM'): Promise<void> {
    const p = this.proc;
    if (!p || p.exitCode !== null) return;
    await new Promise<void>((resolve) => {
      p.once('exit', () => resolve());
      p.kill(signal);
      setTimeout(() => {
        if (p.exitCode === null) p.kill('SIGKILL');
      }, 5000).unref();
    });
  }

  /** Stops and starts the server on the same port and dir (AOF survives). */
  async restart(): Promise<void> {
    await this.kill('SIGTERM');
    await this.spawn();
  }

  async stop(): Promise<void> {
    if (!this.owned) return;
    await this.kill('SIGTERM');
    rmSync(this.dir, { recursive: true, force: true });
  }
}

/** A 3-master Redis Cluster (no replicas) on loopback. */
export class RedisCluster {
  private constructor(readonly servers: RedisServer[]) {}

  get nodes(): { host: string; port: number }[] {
    return this.servers.map((s) => ({ host: '127.0.0.1', port: s.port }));
  }

  static async start(masters = 3): Promise<RedisCluster> {
    const servers: RedisServer[] = [];
    try {
      for (let i = 0; i < masters; i++) {
        servers.push(await RedisServer.start({ extraArgs: ['--cluster-enabled', 'yes', '--cluster-config-file', 'nodes.conf', '--cluster-node-timeout', '5000'] }));
      }
      await run('redis-cli', ['--cluster', 'create', ...servers.map((s) => `127.0.0.1:${s.port}`), '--cluster-replicas', '0', '--cluster-yes'], { timeout: 30_000 });
      for (const s of servers) {
        await waitReady(s.port, 20_000, async (c) => String(await c.call('CLUSTER', 'INFO')).includes('cluster_state:ok'));
      }
      return new RedisCluster(servers);
    } catch (err) {
      await Promise.allSettled(servers.map((s) => s.stop()));
      throw err;
    }
  }

  async stop(): Promise<void> {
    await Promise.allSettled(this.servers.map((s) => s.stop()));
  }
}

let counter = 0;
/** A key prefix unique to this test run and call. */
export function uniquePrefix(name = 't'): string {
  return `eltest-${name}-${process.pid}-${Date.now().toString(36)}-${counter++}`;
}
