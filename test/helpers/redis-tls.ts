/**
 * Test harness: a TLS-only redis-server (`--port 0`, `--tls-port`) with a CA and a server certificate made by
 * `openssl` for this server alone, and a Redis Cluster of such servers, its bus over TLS too (see redis-server.ts
 * for the process handling).
 */
import { execFile, execFileSync, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { endProcess, freeClusterPort, freePort, onFreePort, spawnRedis, waitReady, waitStarted } from './redis-server.js';

const run = promisify(execFile);

/** Paths of the PEM files `makeCertificates` writes. */
export interface TlsFiles {
  caCert: string;
  serverCert: string;
  serverKey: string;
}

/** OpenSSL's arguments for a new P-256 key with no passphrase (fast to make). */
const NEW_KEY = ['-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes'];

/**
 * Writes into `dir` a self-signed CA and a server certificate it signed, valid for `127.0.0.1` and `localhost`
 * (subject alternative names, which Node's hostname check reads) for one day.
 */
export function makeCertificates(dir: string): TlsFiles {
  const f = (name: string) => join(dir, name);
  const openssl = (args: string[]) => execFileSync('openssl', args, { stdio: ['ignore', 'ignore', 'pipe'] });
  openssl(['req', '-x509', '-new', ...NEW_KEY, '-keyout', f('ca.key'), '-out', f('ca.crt'), '-days', '1', '-subj', '/CN=eventlane test CA']);
  openssl(['req', '-new', ...NEW_KEY, '-keyout', f('server.key'), '-out', f('server.csr'), '-subj', '/CN=localhost']);
  writeFileSync(f('server.ext'), 'subjectAltName=IP:127.0.0.1,DNS:localhost\n');
  openssl(['x509', '-req', '-in', f('server.csr'), '-CA', f('ca.crt'), '-CAkey', f('ca.key'), '-CAcreateserial', '-out', f('server.crt'), '-days', '1', '-extfile', f('server.ext')]);
  return { caCert: f('ca.crt'), serverCert: f('server.crt'), serverKey: f('server.key') };
}

/** A redis-server that speaks TLS only, on loopback; clients need its CA (`ca`) to trust it. */
export class TlsRedisServer {
  private constructor(
    readonly port: number,
    readonly dir: string,
    readonly files: TlsFiles,
    private readonly proc: ChildProcess,
  ) {}

  /** `rediss://127.0.0.1:<port>`: the address the server's certificate names. */
  get url(): string {
    return `rediss://127.0.0.1:${this.port}`;
  }

  /** The CA certificate (PEM) that signed the server's: `redisOptions: { tls: { ca } }`. */
  get ca(): Buffer {
    return readFileSync(this.files.caCert);
  }

  /** Certificates made, server started on a free port, answering PING over TLS. Clients are not asked for certificates. */
  static async start(): Promise<TlsRedisServer> {
    const dir = mkdtempSync(join(tmpdir(), 'eventlane-redis-tls-'));
    try {
      return await TlsRedisServer.startWith(makeCertificates(dir), dir);
    } catch (err) {
      rmSync(dir, { recursive: true, force: true });
      throw err;
    }
  }

  /**
   * A server with certificates `files`, its data in `dir` (removed by stop()), on a free port from `pick` (a cluster
   * node's needs its bus port free too), with `extraArgs`.
   */
  static startWith(files: TlsFiles, dir: string, extraArgs: string[] = [], pick: () => Promise<number> = freePort): Promise<TlsRedisServer> {
    const tls = { ca: readFileSync(files.caCert) };
    return onFreePort(async (port) => {
      const args = ['--port', '0', '--tls-port', String(port), '--bind', '127.0.0.1', '--dir', dir, '--save', '', '--appendonly', 'no', '--protected-mode', 'no'];
      args.push('--tls-cert-file', files.serverCert, '--tls-key-file', files.serverKey, '--tls-ca-cert-file', files.caCert, '--tls-auth-clients', 'no', ...extraArgs);
      const proc = spawnRedis(args);
      try {
        await waitStarted(proc, port, 10_000, undefined, { tls });
      } catch (err) {
        proc.kill('SIGKILL');
        throw err;
      }
      return new TlsRedisServer(port, dir, files, proc);
    }, pick);
  }

  async stop(): Promise<void> {
    await endProcess(this.proc);
    rmSync(this.dir, { recursive: true, force: true });
  }
}

/** A Redis Cluster of TLS-only servers (`tls-cluster yes`: the cluster bus over TLS, the TLS ports announced), one CA. */
export class TlsRedisCluster {
  private constructor(
    readonly servers: TlsRedisServer[],
    private readonly certDir: string,
  ) {}

  /** Seeds as `rediss://127.0.0.1:<port>` URLs: TLS for every node the client discovers. */
  get seeds(): string[] {
    return this.servers.map((s) => s.url);
  }

  /** The CA certificate (PEM) that signed every node's. */
  get ca(): Buffer {
    return this.servers[0]!.ca;
  }

  static async start(masters = 3): Promise<TlsRedisCluster> {
    const certDir = mkdtempSync(join(tmpdir(), 'eventlane-redis-tls-ca-'));
    const servers: TlsRedisServer[] = [];
    try {
      const files = makeCertificates(certDir);
      const args = ['--cluster-enabled', 'yes', '--cluster-config-file', 'nodes.conf', '--tls-cluster', 'yes', '--tls-replication', 'yes'];
      for (let i = 0; i < masters; i++) servers.push(await TlsRedisServer.startWith(files, mkdtempSync(join(tmpdir(), 'eventlane-redis-tls-')), args, freeClusterPort));
      const tlsCli = ['--tls', '--cacert', files.caCert];
      await run('redis-cli', [...tlsCli, '--cluster', 'create', ...servers.map((s) => `127.0.0.1:${s.port}`), '--cluster-yes'], { timeout: 30_000 });
      const tls = { ca: readFileSync(files.caCert) };
      for (const s of servers) {
        await waitReady(
          s.port,
          20_000,
          async (c) => {
            const info = String(await c.call('CLUSTER', 'INFO'));
            return info.includes('cluster_state:ok') && info.includes(`cluster_known_nodes:${masters}`);
          },
          undefined,
          { tls },
        );
      }
      return new TlsRedisCluster(servers, certDir);
    } catch (err) {
      await Promise.allSettled(servers.map((s) => s.stop()));
      rmSync(certDir, { recursive: true, force: true });
      throw err;
    }
  }

  async stop(): Promise<void> {
    await Promise.allSettled(this.servers.map((s) => s.stop()));
    rmSync(this.certDir, { recursive: true, force: true });
  }
}
