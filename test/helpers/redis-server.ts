/**
 * Test harness: starts real `redis-server` processes on free loopback ports and stops them.
 * No mocks. `REDIS_URL` may point at an existing server instead (standalone tests only; tests that
 * restart or kill the server always start their own).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Redis, type RedisOptions } from 'ioredis';

/** Servers this process started and has not seen exit: killed if the process exits first (an aborted run). */
const running = new Set<ChildProcess>();
process.once('exit', () => {
  for (const p of running) p.kill('SIGKILL');
});

/**
 * `setpriv --pdeathsig KILL` (util-linux) when there is one: it execs redis-server (same pid, so signals
 * sent to the child reach the server) with the kernel asked to SIGKILL it when this process dies, also when
 * this process is killed and its 'exit' handler never runs (a test run killed by a timeout).
 */
const WITH_PARENT = existsSync('/usr/bin/setpriv') ? ['/usr/bin/setpriv', '--pdeathsig', 'KILL'] : [];

/** Starts `redis-server` with `args`; the process is killed when this one exits or dies, if still running. */
export function spawnRedis(args: string[]): ChildProcess {
  const [cmd, ...pre] = [...WITH_PARENT, 'redis-server'];
  // stdout is the server's log (no logfile is set): its last lines say why a server that exits early did.
  const p = spawn(cmd!, [...pre, ...args], { stdio: ['ignore', 'pipe', 'ignore'] });
  let tail = '';
  p.stdout!.on('data', (d: Buffer) => {
    tail = (tail + d.toString()).slice(-LOG_TAIL_CHARS);
  });
  // 'close' comes after the last of its output has been read ('exit' may come before).
  const closed = new Promise<void>((resolve) => p.once('close', () => resolve()));
  logs.set(p, { tail: () => tail, closed });
  p.on('error', () => undefined);
  running.add(p);
  p.once('exit', () => running.delete(p));
  return p;
}

const LOG_TAIL_CHARS = 2000;
const logs = new WeakMap<ChildProcess, { tail: () => string; closed: Promise<void> }>();

/** What a server's log says went wrong (Redis marks warnings with `#`: the last two of them), else its last line. */
function logReason(p: ChildProcess): string {
  const lines = (logs.get(p)?.tail() ?? '')
    .split('\n')
    .map((l) => l.trim())
    .filter((l) => l !== '');
  const strip = (l: string) => l.replace(/^\d+:[A-Z] .*? [*#-] /, '');
  const warnings = lines.filter((l) => / # /.test(l)).slice(-2);
  return (warnings.length > 0 ? warnings : lines.slice(-1)).map(strip).join(' / ') || '(no output)';
}

/** A server that exited before it was ready: `addressInUse` when it could not listen on its port(s). */
export class ServerExitedError extends Error {
  constructor(
    readonly port: number,
    readonly addressInUse: boolean,
    message: string,
  ) {
    super(message);
  }
}

/**
 * waitReady for a server `p` just spawned (by spawnRedis) on `port`: rejects at once with ServerExitedError (naming its
 * exit and last log line) when the process exits before it answers, instead of polling a dead port until
 * the timeout. `client`: options of the probing connection (`tls` for a TLS-only server).
 */
export async function waitStarted(p: ChildProcess, port: number, timeoutMs = 10_000, check?: (c: Redis) => Promise<boolean>, client: RedisOptions = {}): Promise<void> {
  const log = logs.get(p);
  if (log === undefined) throw new Error('waitStarted: the process was not started by spawnRedis');
  let gone = false;
  const exited = log.closed.then(() => {
    gone = true;
    const reason = logReason(p);
    const how = p.exitCode !== null ? `code ${p.exitCode}` : `signal ${p.signalCode}`;
    throw new ServerExitedError(port, /Address already in use/.test(reason), `redis-server on port ${port} exited (${how}) before it was ready: ${reason}`);
  });
  exited.catch(() => undefined);
  await Promise.race([waitReady(port, timeoutMs, check, () => gone, client), exited]);
}

/** Whether `p` has neither exited nor been killed. */
export function isRunning(p: ChildProcess | undefined): p is ChildProcess {
  return p !== undefined && p.exitCode === null && p.signalCode === null;
}

/** Sends `signal` (SIGKILL after 5 s if it is still running) and resolves once `p` has exited. */
export async function endProcess(p: ChildProcess | undefined, signal: NodeJS.Signals = 'SIGTERM'): Promise<void> {
  if (!isRunning(p)) return;
  await new Promise<void>((resolve) => {
    p.once('exit', () => resolve());
    p.kill(signal);
    setTimeout(() => {
      if (isRunning(p)) p.kill('SIGKILL');
    }, 5000).unref();
  });
}

/** A loopback port nothing listens on now. */
export function freePort(): Promise<number> {
  return listenOn(0);
}

/**
 * Listens on `port` (0: any free one) on loopback, closes, and resolves with the port; rejects when it is
 * taken.
 */
function listenOn(port: number): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.unref();
    srv.on('error', reject);
    srv.listen(port, '127.0.0.1', () => {
      const addr = srv.address();
      const port = typeof addr === 'object' && addr ? addr.port : 0;
      srv.close(() => resolve(port));
    });
  });
}

/** Redis Cluster's bus port is the client port plus this (redis.conf `cluster-port` 0). */
export const CLUSTER_BUS_OFFSET = 10_000;

/** A free port whose cluster bus port (port + 10,000) is free too: a cluster node listens on both. */
export async function freeClusterPort(): Promise<number> {
  for (let tries = 0; ; tries++) {
    const port = await freePort();
    if (port + CLUSTER_BUS_OFFSET > 65_535) continue;
    try {
      await listenOn(port + CLUSTER_BUS_OFFSET);
      return port;
    } catch (err) {
      if (tries >= 50) throw err;
    }
  }
}

/** Runs `f` with a client on the loopback server at `port`, disconnected after. */
export async function withRedis<T>(port: number, f: (c: Redis) => Promise<T>): Promise<T> {
  const c = new Redis({ host: '127.0.0.1', port, maxRetriesPerRequest: 1 });
  try {
    return await f(c);
  } finally {
    c.disconnect();
  }
}

/**
 * Polls until the server on `port` answers PING (and `check`), for `timeoutMs`; stops early once `gone()` says it
 * never will. `client`: options of the probing connection (`tls` for a TLS-only server).
 */
export async function waitReady(port: number, timeoutMs = 10_000, check?: (c: Redis) => Promise<boolean>, gone?: () => boolean, client: RedisOptions = {}): Promise<void> {
  const until = Date.now() + timeoutMs;
  let last: unknown;
  while (Date.now() < until) {
    if (gone?.()) return; // the caller reports why
    const c = new Redis({ ...client, host: '127.0.0.1', port, lazyConnect: true, maxRetriesPerRequest: 0, retryStrategy: () => null, enableOfflineQueue: false, enableReadyCheck: false });
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

/** Ports tried by onFreePort when the one it picked is taken before the server listens on it. */
const START_ATTEMPTS = 5;

/**
 * `launch(port)` on a port from `pick`; on another one (up to START_ATTEMPTS ports) when the server it started
 * exited because the port was taken: free when picked, taken before the server bound it (by a server or a
 * connection of a test running beside this one), rather than polling the dead server's port until waitReady
 * times out.
 */
export async function onFreePort<T>(launch: (port: number) => Promise<T>, pick: () => Promise<number> = freePort): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    const port = await pick();
    try {
      return await launch(port);
    } catch (err) {
      if (!(err instanceof ServerExitedError && err.addressInUse && attempt < START_ATTEMPTS)) throw err;
    }
  }
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

  /** The server's process id, while it runs. */
  get pid(): number | undefined {
    return isRunning(this.proc) ? this.proc.pid : undefined;
  }

  /** Started and not killed or stopped. */
  get alive(): boolean {
    return isRunning(this.proc);
  }

  static async start(options: ServerOptions = {}): Promise<RedisServer> {
    const extra = options.extraArgs ?? [];
    const pick = extra.includes('--cluster-enabled') ? freeClusterPort : freePort;
    return onFreePort(async (port) => {
      const dir = mkdtempSync(join(tmpdir(), 'eventlane-redis-'));
      const args = ['--port', String(port), '--bind', '127.0.0.1', '--dir', dir, '--save', '', '--protected-mode', 'no'];
      if (options.aof) args.push('--appendonly', 'yes', '--appendfsync', 'always');
      else args.push('--appendonly', 'no');
      args.push(...extra);
      const s = new RedisServer(port, args, dir, true);
      try {
        await s.spawn();
        return s;
      } catch (err) {
        rmSync(dir, { recursive: true, force: true });
        throw err;
      }
    }, pick);
  }

  /** `REDIS_URL` when set (not owned: never stopped), else a fresh server. */
  static async startOrExternal(): Promise<RedisServer | { url: string; stop(): Promise<void> }> {
    const ext = process.env['REDIS_URL'];
    if (ext) return { url: ext, stop: async () => undefined };
    return RedisServer.start();
  }

  private async spawn(): Promise<void> {
    this.proc = spawnRedis(this.args);
    try {
      await waitStarted(this.proc, this.port);
    } catch (err) {
      this.proc.kill('SIGKILL');
      throw err;
    }
  }

  /** Ends the process with `signal` (SIGTERM: a clean shutdown; SIGKILL: a crash) and waits for it to exit. */
  private kill(signal: NodeJS.Signals = 'SIGTERM'): Promise<void> {
    return endProcess(this.proc, signal);
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

let counter = 0;
/** A key prefix unique to this test run and call. */
export function uniquePrefix(name = 't'): string {
  return `eltest-${name}-${process.pid}-${Date.now().toString(36)}-${counter++}`;
}

/** Calls of each command (subcommands as `xgroup|setid`) the server has run since it started or `CONFIG RESETSTAT`, from INFO commandstats. */
export async function commandCalls(c: Redis): Promise<Map<string, number>> {
  const info = await c.info('commandstats');
  return new Map([...info.matchAll(/^cmdstat_(\S+):calls=(\d+)/gm)].map((m) => [m[1]!, Number(m[2])]));
}
