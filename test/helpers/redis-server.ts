/**
 * Test harness: starts real `redis-server` processes on free loopback ports and stops them.
 * No mocks. `REDIS_URL` may point at an existing server instead (standalone tests only; tests that
 * restart or kill the server always start their own).
 */
import { spawn, execFile, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
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

  /** Started and not killed or stopped. */
  get alive(): boolean {
    return this.proc !== undefined && this.proc.exitCode === null && this.proc.signalCode === null;
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
    if (!p || p.exitCode !== null || p.signalCode !== null) return;
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

  /** SIGSTOP / SIGCONT: the process stops reading and answering (a stalled replica), then goes on. */
  pause(): void {
    this.proc?.kill('SIGSTOP');
  }

  resume(): void {
    this.proc?.kill('SIGCONT');
  }

  /** SIGKILL: the server dies at once, as in a crash (what it had not replicated or persisted is gone). */
  async crash(): Promise<void> {
    await this.kill('SIGKILL');
  }

  async stop(): Promise<void> {
    if (!this.owned) return;
    await this.kill('SIGTERM');
    rmSync(this.dir, { recursive: true, force: true });
  }
}

/** A Redis Cluster on loopback: `masters` masters, each with `replicas` replicas. */
export class RedisCluster {
  private constructor(readonly servers: RedisServer[]) {}

  get nodes(): { host: string; port: number }[] {
    return this.servers.map((s) => ({ host: '127.0.0.1', port: s.port }));
  }

  static async start(masters = 3, replicas = 0, nodeTimeoutMs = 5000): Promise<RedisCluster> {
    const servers: RedisServer[] = [];
    try {
      for (let i = 0; i < masters * (1 + replicas); i++) {
        servers.push(await RedisServer.start({ extraArgs: ['--cluster-enabled', 'yes', '--cluster-config-file', 'nodes.conf', '--cluster-node-timeout', String(nodeTimeoutMs)] }));
      }
      await run('redis-cli', ['--cluster', 'create', ...servers.map((s) => `127.0.0.1:${s.port}`), '--cluster-replicas', String(replicas), '--cluster-yes'], { timeout: 30_000 });
      for (const s of servers) {
        await waitReady(s.port, 20_000, async (c) => {
          const info = String(await c.call('CLUSTER', 'INFO'));
          return info.includes('cluster_state:ok') && info.includes(`cluster_known_nodes:${servers.length}`);
        });
      }
      // Every replica has finished its first sync (a failover before that would find nothing to promote).
      for (const s of servers) {
        await waitReady(s.port, 20_000, async (c) => {
          const info = String(await c.info('replication'));
          return info.includes('role:master') || info.includes('master_link_status:up');
        });
      }
      return new RedisCluster(servers);
    } catch (err) {
      await Promise.allSettled(servers.map((s) => s.stop()));
      throw err;
    }
  }

  /** The server that is master for the slot of `key` now (asks the cluster). */
  async masterOf(key: string): Promise<RedisServer> {
    const c = new Redis(this.servers.find((s) => s.alive)!.port, '127.0.0.1');
    try {
      const slot = Number(await c.call('CLUSTER', 'KEYSLOT', key));
      const ranges = (await c.call('CLUSTER', 'SLOTS')) as [number, number, [string, number, ...unknown[]], ...unknown[]][];
      const range = ranges.find(([from, to]) => slot >= from && slot <= to)!;
      return this.servers.find((s) => s.port === Number(range[2][1]))!;
    } finally {
      c.disconnect();
    }
  }

  /** Kills the master of `key`'s slot (SIGKILL); resolves once its replica took over and the cluster is ok. */
  async failover(key: string, timeoutMs = 60_000): Promise<RedisServer> {
    const dead = await this.masterOf(key);
    await dead.crash();
    const until = Date.now() + timeoutMs;
    for (;;) {
      try {
        const now = await this.masterOf(key);
        if (now !== dead) {
          await waitReady(now.port, Math.max(1000, until - Date.now()), async (c) => String(await c.call('CLUSTER', 'INFO')).includes('cluster_state:ok'));
          return now;
        }
      } catch {
        // a node answered mid-failover; ask again
      }
      if (Date.now() > until) throw new Error(`no failover for ${key} within ${timeoutMs} ms`);
      await new Promise((r) => setTimeout(r, 200));
    }
  }

  async stop(): Promise<void> {
    await Promise.allSettled(this.servers.map((s) => s.stop()));
  }
}

/**
 * A master, `replicas` replicas and one Sentinel (quorum 1) on loopback, monitoring the master as `name`.
 * The Sentinel's config file lives in its own temp dir (Sentinel rewrites it).
 */
export class RedisSentinelSet {
  private constructor(
    readonly servers: RedisServer[],
    private readonly sentinel: ChildProcess,
    readonly sentinelPort: number,
    private readonly dir: string,
    readonly name: string,
  ) {}

  /** ioredis options that reach the master through the Sentinel (`transport.redisOptions`). */
  get redisOptions(): { sentinels: { host: string; port: number }[]; name: string } {
    return { sentinels: [{ host: '127.0.0.1', port: this.sentinelPort }], name: this.name };
  }

  static async start(replicas = 1, name = 'elmaster'): Promise<RedisSentinelSet> {
    const master = await RedisServer.start();
    const servers = [master];
    let proc: ChildProcess | undefined;
    const dir = mkdtempSync(join(tmpdir(), 'eventlane-sentinel-'));
    try {
      for (let i = 0; i < replicas; i++) {
        const replica = await RedisServer.start({ extraArgs: ['--replicaof', '127.0.0.1', String(master.port)] });
        servers.push(replica);
        await waitReady(replica.port, 20_000, async (c) => String(await c.info('replication')).includes('master_link_status:up'));
      }
      const port = await freePort();
      const conf = join(dir, 'sentinel.conf');
      writeFileSync(
        conf,
        [
          `port ${port}`,
          'bind 127.0.0.1',
          'protected-mode no',
          `dir ${dir}`,
          `sentinel monitor ${name} 127.0.0.1 ${master.port} 1`,
          `sentinel down-after-milliseconds ${name} 1000`,
          `sentinel failover-timeout ${name} 5000`,
          `sentinel parallel-syncs ${name} 1`,
          '',
        ].join('\n'),
      );
      proc = spawn('redis-server', [conf, '--sentinel'], { stdio: 'ignore' });
      proc.on('error', () => undefined);
      // Ready once the Sentinel is linked to every replica (it finds them in the master's INFO) and has
      // heard from each: before that, SENTINEL FAILOVER answers NOGOODSLAVE.
      await waitReady(port, 20_000, async (c) => {
        const known = (await c.call('SENTINEL', 'REPLICAS', name)) as string[][];
        const field = (r: string[], f: string): string => String(r[r.indexOf(f) + 1]);
        const linked = known.filter((r) => field(r, 'flags') === 'slave' && Number(field(r, 'last-ok-ping-reply')) < 1000 && field(r, 'master-link-status') === 'ok');
        return linked.length === replicas;
      });
      return new RedisSentinelSet(servers, proc, port, dir, name);
    } catch (err) {
      proc?.kill('SIGKILL');
      await Promise.allSettled(servers.map((s) => s.stop()));
      rmSync(dir, { recursive: true, force: true });
      throw err;
    }
  }

  /** Resolves once the master (as the Sentinel reports it) has `n` replicas online. */
  async replicasOnline(n: number, timeoutMs = 30_000): Promise<void> {
    await waitReady(await this.masterPort(), timeoutMs, async (m) => {
      const info = String(await m.info('replication'));
      return info.includes('role:master') && (info.match(/^slave\d+:.*state=online/gm) ?? []).length >= n;
    });
  }

  /** The servers by role, as the Sentinel reports the master. */
  async roles(): Promise<{ master: RedisServer; replicas: RedisServer[] }> {
    const port = await this.masterPort();
    return { master: this.servers.find((s) => s.port === port)!, replicas: this.servers.filter((s) => s.port !== port) };
  }

  /** The master's port as the Sentinel reports it. */
  async masterPort(): Promise<number> {
    const c = new Redis({ host: '127.0.0.1', port: this.sentinelPort, maxRetriesPerRequest: 1 });
    try {
      const [, port] = (await c.call('SENTINEL', 'GET-MASTER-ADDR-BY-NAME', this.name)) as [string, string];
      return Number(port);
    } finally {
      c.disconnect();
    }
  }

  /**
   * A failover to the replica: `SENTINEL FAILOVER` (graceful), or `crash` the master with SIGKILL and let
   * the Sentinel notice (after down-after-milliseconds, 1 s). Resolves with the new master's port once the
   * Sentinel reports it and it accepts writes.
   */
  async failover(how: 'graceful' | 'crash' = 'graceful', timeoutMs = 30_000): Promise<number> {
    const before = await this.masterPort();
    const until = Date.now() + timeoutMs;
    if (how === 'crash') {
      await this.servers.find((s) => s.port === before)!.crash();
    } else {
      const c = new Redis({ host: '127.0.0.1', port: this.sentinelPort, maxRetriesPerRequest: 1 });
      try {
        // NOGOODSLAVE while the Sentinel has not yet refreshed what it knows of the replicas: try again.
        for (;;) {
          try {
            await c.call('SENTINEL', 'FAILOVER', this.name);
            break;
          } catch (err) {
            if (!String(err).includes('NOGOODSLAVE') || Date.now() > until) throw err;
            await new Promise((r) => setTimeout(r, 200));
          }
        }
      } finally {
        c.disconnect();
      }
    }
    for (;;) {
      const now = await this.masterPort();
      if (now !== before) {
        await waitReady(now, Math.max(1000, until - Date.now()), async (m) => String(await m.info('replication')).includes('role:master'));
        return now;
      }
      if (Date.now() > until) throw new Error(`no failover within ${timeoutMs} ms`);
      await new Promise((r) => setTimeout(r, 100));
    }
  }

  async stop(): Promise<void> {
    const p = this.sentinel;
    if (p.exitCode === null && p.signalCode === null) {
      await new Promise<void>((resolve) => {
        p.once('exit', () => resolve());
        p.kill('SIGTERM');
        setTimeout(() => p.kill('SIGKILL'), 5000).unref();
      });
    }
    await Promise.allSettled(this.servers.map((s) => s.stop()));
    rmSync(this.dir, { recursive: true, force: true });
  }
}

let counter = 0;
/** A key prefix unique to this test run and call. */
export function uniquePrefix(name = 't'): string {
  return `eltest-${name}-${process.pid}-${Date.now().toString(36)}-${counter++}`;
}
