/** Test harness: a Redis Cluster of real redis-server processes (see redis-server.ts). */
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { afterAll, beforeAll } from 'vitest';
import { RedisServer, waitReady, withRedis } from './redis-server.js';

const run = promisify(execFile);

/** A Redis Cluster on loopback: `masters` masters, each with `replicas` replicas. */
export class RedisCluster {
  private constructor(readonly servers: RedisServer[]) {}

  get nodes(): { host: string; port: number }[] {
    return this.servers.map((s) => ({ host: '127.0.0.1', port: s.port }));
  }

  /**
   * `fullCoverage: false` (redis.conf `cluster-require-full-coverage no`): the other masters keep serving
   * while a master's slots are uncovered (between its FAIL and its replica's promotion); by default the
   * whole cluster answers CLUSTERDOWN then. `extraArgs` go to every server (e.g. AOF).
   */
  static async start(masters = 3, replicas = 0, nodeTimeoutMs = 5000, fullCoverage = true, extraArgs: string[] = []): Promise<RedisCluster> {
    const servers: RedisServer[] = [];
    try {
      for (let i = 0; i < masters * (1 + replicas); i++) {
        const args = ['--cluster-enabled', 'yes', '--cluster-config-file', 'nodes.conf', '--cluster-node-timeout', String(nodeTimeoutMs)];
        if (!fullCoverage) args.push('--cluster-require-full-coverage', 'no');
        args.push(...extraArgs);
        servers.push(await RedisServer.start({ extraArgs: args }));
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
    return withRedis(this.servers.find((s) => s.alive)!.port, async (c) => {
      const slot = Number(await c.call('CLUSTER', 'KEYSLOT', key));
      const ranges = (await c.call('CLUSTER', 'SLOTS')) as [number, number, [string, number, ...unknown[]], ...unknown[]][];
      const range = ranges.find(([from, to]) => slot >= from && slot <= to)!;
      return this.servers.find((s) => s.port === Number(range[2][1]))!;
    });
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

  /** The live servers that are masters now. */
  async masters(): Promise<RedisServer[]> {
    const out: RedisServer[] = [];
    for (const s of this.servers.filter((x) => x.alive)) {
      if (await withRedis(s.port, async (c) => String(await c.info('replication')).includes('role:master'))) out.push(s);
    }
    return out;
  }

  /** The first replica of `master`. */
  async replicaOf(master: RedisServer): Promise<RedisServer> {
    const info = await withRedis(master.port, (c) => c.info('replication'));
    const port = Number(/slave0:ip=[^,]+,port=(\d+)/.exec(info)?.[1]);
    const replica = this.servers.find((s) => s.port === port);
    if (replica === undefined) throw new Error(`no replica of the master on port ${master.port}`);
    return replica;
  }

  /**
   * Starts moving the slot of `key` to master `to` (CLUSTER SETSLOT IMPORTING on it, MIGRATING on the
   * slot's master). Until `migrateSlot` ends it, the old master answers a command for a key it does not
   * hold with ASK, naming `to`.
   */
  async beginMigration(key: string, to: RedisServer): Promise<{ slot: number; from: RedisServer; dstId: string }> {
    const from = await this.masterOf(key);
    if (from === to) throw new Error(`the slot of ${key} is on port ${to.port} already`);
    const slot = await withRedis(from.port, async (c) => Number(await c.call('CLUSTER', 'KEYSLOT', key)));
    const srcId = await withRedis(from.port, async (c) => String(await c.call('CLUSTER', 'MYID')));
    const dstId = await withRedis(to.port, async (c) => String(await c.call('CLUSTER', 'MYID')));
    await withRedis(to.port, (c) => c.call('CLUSTER', 'SETSLOT', slot, 'IMPORTING', srcId));
    await withRedis(from.port, (c) => c.call('CLUSTER', 'SETSLOT', slot, 'MIGRATING', dstId));
    return { slot, from, dstId };
  }

  /**
   * Moves the slot of `key`, with its keys, to master `to` (the resharding steps: `beginMigration`, MIGRATE
   * of every key, then SETSLOT NODE on every master). Clients learn of it by a MOVED reply.
   *
   * `keysPerMigrate` keys go per MIGRATE (default 100), with `pauseMs` between them while keys remain (default
   * 0): a pause leaves the slot half moved, as a resharding of large keys does, so the old master answers ASK
   * for a key already moved and TRYAGAIN for a multi-key command whose keys are on both masters. One move at a
   * time: two masters migrating to each other at once each wait in MIGRATE for the other (IOERR at its timeout).
   */
  async migrateSlot(key: string, to: RedisServer, options: { keysPerMigrate?: number; pauseMs?: number } = {}): Promise<void> {
    const { keysPerMigrate = 100, pauseMs = 0 } = options;
    const { slot, from, dstId } = await this.beginMigration(key, to);
    await withRedis(from.port, async (c) => {
      for (;;) {
        const keys = (await c.call('CLUSTER', 'GETKEYSINSLOT', slot, keysPerMigrate)) as string[];
        if (keys.length === 0) break;
        await c.call('MIGRATE', '127.0.0.1', to.port, '', 0, 5000, 'KEYS', ...keys);
        if (pauseMs > 0 && Number(await c.call('CLUSTER', 'COUNTKEYSINSLOT', slot)) > 0) await new Promise((r) => setTimeout(r, pauseMs));
      }
    });
    for (const m of [to, from, ...(await this.masters()).filter((x) => x !== to && x !== from)]) {
      await withRedis(m.port, (c) => c.call('CLUSTER', 'SETSLOT', slot, 'NODE', dstId));
    }
  }

  async stop(): Promise<void> {
    await Promise.allSettled(this.servers.map((s) => s.stop()));
  }
}

/**
 * A cluster for the tests of the enclosing file or describe block: started before them (beforeAll), stopped
 * after (afterAll). Returns its getter. A long `nodeTimeoutMs` keeps a stalled master its slots' master (no
 * failover) for the whole test; a short one lets replicas take over.
 */
export function clusterForTests(masters: number, replicas: number, nodeTimeoutMs: number, fullCoverage = true): () => RedisCluster {
  let cluster: RedisCluster | undefined;
  beforeAll(async () => {
    cluster = await RedisCluster.start(masters, replicas, nodeTimeoutMs, fullCoverage);
  }, 120_000);
  afterAll(async () => {
    await cluster?.stop();
  });
  return () => {
    if (cluster === undefined) throw new Error('the cluster is not started (clusterForTests is used outside its tests)');
    return cluster;
  };
}
