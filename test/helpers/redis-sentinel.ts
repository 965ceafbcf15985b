/** Test harness: a master, its replicas and a Sentinel, real redis-server processes (see redis-server.ts). */
import type { ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { endProcess, onFreePort, RedisServer, spawnRedis, waitReady, waitStarted, withRedis } from './redis-server.js';

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
      const [port, sentinel] = await onFreePort(async (port) => {
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
        proc = spawnRedis([conf, '--sentinel']);
        // Ready once the Sentinel is linked to every replica (it finds them in the master's INFO) and has
        // heard from each: before that, SENTINEL FAILOVER answers NOGOODSLAVE.
        await waitStarted(proc, port, 20_000, async (c) => {
          const known = (await c.call('SENTINEL', 'REPLICAS', name)) as string[][];
          const field = (r: string[], f: string): string => String(r[r.indexOf(f) + 1]);
          const linked = known.filter((r) => field(r, 'flags') === 'slave' && Number(field(r, 'last-ok-ping-reply')) < 1000 && field(r, 'master-link-status') === 'ok');
          return linked.length === replicas;
        });
        return [port, proc] as const;
      });
      return new RedisSentinelSet(servers, sentinel, port, dir, name);
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
    const [, port] = (await withRedis(this.sentinelPort, (c) => c.call('SENTINEL', 'GET-MASTER-ADDR-BY-NAME', this.name))) as [string, string];
    return Number(port);
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
      await withRedis(this.sentinelPort, async (c) => {
        // NOGOODSLAVE while the Sentinel has not yet refreshed what it knows of the replicas: try again.
        for (;;) {
          try {
            await c.call('SENTINEL', 'FAILOVER', this.name);
            return;
          } catch (err) {
            if (!String(err).includes('NOGOODSLAVE') || Date.now() > until) throw err;
            await new Promise((r) => setTimeout(r, 200));
          }
        }
      });
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
    await endProcess(this.sentinel);
    await Promise.allSettled(this.servers.map((s) => s.stop()));
    rmSync(this.dir, { recursive: true, force: true });
  }
}
