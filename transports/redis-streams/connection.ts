/**
 * Building ioredis clients (standalone or Cluster) with bounded connect and command times, so an
 * unreachable server turns into a `ConnectionError` naming the address instead of an endless wait.
 */
import { Cluster, Redis, type ClusterNode, type ClusterOptions, type RedisOptions } from 'ioredis';
import { ConfigError, ConnectionError, TimeoutError } from '../../src/errors.js';
import type { BackoffOptions } from '../../src/transport.js';
import { credentialsOrigin, type ResolvedConfig } from './config.js';

export type Client = Redis | Cluster;

export type Role = 'publish' | 'command' | 'read';

/** Hides the password of a URL. */
export function redactUrl(url: string): string {
  try {
    const u = new URL(url);
    if (u.password) u.password = '***';
    return u.toString().replace(/\/$/, '');
  } catch {
    return url;
  }
}

export class Connector {
  /** Address for messages (password hidden). */
  readonly address: string;
  readonly isCluster: boolean;
  private seq = 0;

  constructor(
    private readonly config: ResolvedConfig,
    /** Given each client created, to log its losses (connection-log.ts). */
    private readonly watch: (client: Client, role: Role) => void = noop,
  ) {
    this.isCluster = config.cluster !== undefined;
    if (config.cluster) {
      this.address = 'redis cluster ' + config.cluster.nodes.map((n) => (typeof n === 'string' ? redactUrl(n) : `${n.host}:${n.port}`)).join(',');
    } else if (Array.isArray(config.redisOptions?.['sentinels'])) {
      const sentinels = config.redisOptions['sentinels'] as { host?: string; port?: number }[];
      this.address = `redis sentinel "${String(config.redisOptions['name'] ?? 'mymaster')}" via ${sentinels.map((s) => `${s.host ?? '127.0.0.1'}:${s.port ?? 26379}`).join(',')}`;
    } else if (config.url) {
      this.address = redactUrl(config.url);
    } else {
      const o = config.redisOptions;
      this.address = `redis://${typeof o?.['host'] === 'string' ? o['host'] : '127.0.0.1'}:${typeof o?.['port'] === 'number' ? o['port'] : 6379}`;
    }
  }

  private baseOptions(role: Role): RedisOptions {
    const c = this.config;
    const o: RedisOptions = {
      ...(c.redisOptions as RedisOptions | undefined),
      lazyConnect: true,
      connectTimeout: c.commandTimeoutMs,
      // Commands wait through reconnects but never longer than commandTimeoutMs; blocking reads are
      // bounded by BLOCK and the consumer's watchdog instead.
      maxRetriesPerRequest: null,
      enableOfflineQueue: true,
      retryStrategy: (times: number) => Math.min(50 * times, 1000),
      connectionName: `eventlane:${role}:${process.pid}:${this.seq++}`,
      // disconnect() ends the socket and destroys it if it has not closed after this. ioredis's 2 s timer
      // also runs for a socket that had already failed (it never closes again): a bus that could not
      // connect kept its process alive 2 s after createEventBus rejected.
      disconnectTimeout: 100,
    };
    if (role === 'publish') {
      // Publishing never queues blind: a write waits for 'ready' (bounded by commandTimeoutMs, one
      // timer per write, not per command) and is then sent, or rejected without being sent. Commands
      // in flight when a connection drops are not silently resent later (the publisher rejects them).
      o.enableOfflineQueue = false;
      o.autoResendUnfulfilledCommands = false;
    }
    if (c.username !== undefined) o.username = c.username;
    if (c.password !== undefined) o.password = c.password;
    // rediss:// cluster seeds: every node over TLS (TLS options given in redisOptions.tls are kept).
    if (c.tls === true) o.tls ??= {};
    return o;
  }

  /** A new, not yet connected client (watched: see the constructor). */
  create(role: Role): Client {
    const c = this.config;
    if (c.cluster) {
      const nodes: ClusterNode[] = c.cluster.nodes.map((n) => (typeof n === 'string' ? n : { host: n.host, port: n.port }));
      const user = c.cluster.options as ClusterOptions | undefined;
      // Node options given the ioredis way (cluster.options.redisOptions: a password, say) count too; the
      // transport's own settings win, as with transport.redisOptions. (Merged, not replaced: a password given
      // there must be sent, or connecting fails at its timeout.)
      const redisOptions: RedisOptions = { ...user?.redisOptions, ...this.baseOptions(role) };
      delete redisOptions.host;
      delete redisOptions.port;
      const retryMs = user?.retryDelayOnFailover ?? 100;
      const opts: ClusterOptions = {
        ...user,
        // A command whose node went away is retried every retryDelayOnFailover until the slot has a
        // master again; ioredis gives up after maxRedirections tries (16: ~1.6 s, shorter than a
        // failover). Keep trying for commandTimeoutMs, as a publish does while a standalone server is down.
        maxRedirections: user?.maxRedirections ?? Math.max(16, Math.ceil(c.commandTimeoutMs / Math.max(1, retryMs))),
        lazyConnect: true,
        redisOptions,
        enableOfflineQueue: role !== 'publish',
        clusterRetryStrategy: (times: number) => Math.min(100 * times, 2000),
        // Writes to different partitions land on different nodes: let ioredis group them per node.
        // (publish connections only: they send nothing but XADD, whose key ioredis always finds).
        enableAutoPipelining: role === 'publish',
      };
      return this.commandTimeoutOnceReady(role, new Cluster(nodes, opts));
    }
    const opts = this.baseOptions(role);
    return this.commandTimeoutOnceReady(role, c.url ? new Redis(c.url, opts) : new Redis(opts));
  }

  /**
   * Watches the client (`watch`). The command connection's commands time out after commandTimeoutMs, from its first 'ready' on. Not while
   * it first connects: ioredis queues its handshake (CLIENT SETNAME, SETINFO, INFO) again on each attempt and
   * loses the previous attempt's commands unsettled when a socket that opened fails (another server on the
   * port, a proxy), so their timers kept the process alive commandTimeoutMs after createEventBus rejected.
   */
  private commandTimeoutOnceReady(role: Role, client: Client): Client {
    this.watch(client, role);
    if (role !== 'command') return client;
    const ms = this.config.commandTimeoutMs;
    client.once('ready', () => {
      if (client instanceof Cluster) {
        (client.options.redisOptions ??= {}).commandTimeout = ms;
        for (const node of client.nodes('all')) node.options.commandTimeout = ms;
      } else {
        client.options.commandTimeout = ms;
      }
    });
    return client;
  }

  /** Connects `client`, rejecting with `ConnectionError` (naming the address) after `commandTimeoutMs`. */
  async connect(client: Client): Promise<void> {
    const ms = this.config.commandTimeoutMs;
    let timer: NodeJS.Timeout | undefined;
    let lastError: unknown;
    let fail: ((err: unknown) => void) | undefined;
    const started = Date.now();
    let onEnd: (() => void) | undefined;
    // Set once this connect settles: a Cluster retry scheduled before then must not run after it (its
    // connect() would open the client the catch below disconnected, and schedule the next, for good).
    let settled = false;
    let retry: NodeJS.Timeout | undefined;
    const onError = (err: unknown): void => {
      lastError = err;
      // Bad credentials do not get better by retrying: fail now instead of at the timeout. Nor does a db the
      // server has not got: ioredis reports its failed SELECT as an 'error' and goes on, ready, on db 0.
      // Nor does a server that is not a Cluster, given as a cluster seed.
      if (err instanceof Error && FAIL_AT_ONCE.some((re) => re.test(err.message))) fail?.(err);
    };
    client.on('error', onError);
    // A Cluster reports a node's refusal of the credentials as a 'node error'; its own 'error' says only that
    // it could not refresh its slots, again and again until the connect times out.
    if (client instanceof Cluster) client.on('node error', onError);
    try {
      await new Promise<void>((resolve, reject) => {
        fail = reject;
        timer = setTimeout(() => reject(new TimeoutError(`timed out after ${ms} ms`)), ms);
        const attempt = (): void => {
          retry = undefined;
          if (settled) return;
          // A Cluster that is waiting to retry by itself (clusterRetryStrategy) is left to it: a connect() of
          // ours on top stacked another retry timer per call, which disconnect() does not clear, and a
          // failed connect kept the process alive up to 2 s after it rejected.
          if (client instanceof Cluster && client.status === 'reconnecting') {
            retry = setTimeout(attempt, 100).unref();
            return;
          }
          client.connect().then(resolve, (err: unknown) => {
            lastError = err;
            // ioredis keeps retrying in the background; a Cluster needs a fresh connect() call (not once
            // this connect gave up or the caller disconnected it: that would open it again).
            if (client instanceof Cluster && client.status !== 'ready' && !settled) retry = setTimeout(attempt, 100).unref();
          });
        };
        attempt();
        client.once('ready', () => resolve());
        // Disconnected by the caller while connecting (a consumer closing): give up now, not at the timeout.
        // ('end' comes only from disconnect(): both retry strategies here always retry.)
        onEnd = () => {
          settled = true;
          reject(new ConnectionError(`the connection to ${this.address} was closed while connecting`));
        };
        client.once('end', onEnd);
      });
      // One deadline for both waits: the PING gets what is left of commandTimeoutMs.
      if (client instanceof Cluster) await this.pingCluster(client, Math.max(0, started + ms - Date.now()));
    } catch (err) {
      settled = true;
      clearTimeout(retry);
      client.disconnect();
      // A PING that failed (NOAUTH from a node) is the reason; after a timeout, the last connection error is.
      throw this.connectFailure(err, err instanceof TimeoutError || err instanceof ConnectionError ? lastError : err);
    } finally {
      settled = true;
      clearTimeout(retry);
      clearTimeout(timer);
      client.off('error', onError);
      client.off('node error', onError);
      if (onEnd) client.off('end', onEnd);
    }
  }

  /**
   * The error `connect` rejects with when its wait failed with `err`: `reason` is the error that says why (a
   * ConfigError for a cluster seed that is a standalone server, else a ConnectionError naming the address).
   */
  private connectFailure(err: unknown, reason: unknown): Error {
    // ioredis's refusal of a command while its socket is still connecting says nothing of why: no reason then.
    const why = reason instanceof Error && !/Stream isn't writeable/.test(reason.message) ? `: ${reason.message}` : '';
    const text = reason instanceof Error ? reason.message : '';
    if (NOT_CLUSTER.test(text)) {
      const message = `${this.address} is not a Redis Cluster (${text}): connect with transport.url instead of transport.cluster`;
      return new ConfigError(message, [{ path: ['transport', 'cluster', 'nodes'], message }], { cause: reason });
    }
    return new ConnectionError(
      AUTH_REFUSED.test(text)
        ? `Redis at ${this.address} refused the credentials (${credentialsOrigin(this.config)})${why}`
        : DB_REFUSED.test(text)
          ? `Redis at ${this.address} cannot select the database of transport.url (its /db)${why}`
          : `Cannot connect to ${this.address} within ${this.config.commandTimeoutMs} ms (transport.commandTimeoutMs)${why}`,
      { cause: reason ?? err },
    );
  }

  /**
   * A PING through a ready Cluster client: a node that refuses us (credentials, ACL) fails the connect now
   * rather than at the first real command. ioredis picks the node: if it is a stalled master, the PING gets
   * no answer, and the client, ready with its slot map, is used anyway after `ms` (a PING with no timeout
   * would hold createEventBus and subscribe for as long as any master is stalled).
   */
  private async pingCluster(client: Cluster, ms: number): Promise<void> {
    const ping = client.ping();
    let timer: NodeJS.Timeout | undefined;
    const waited = new Promise<void>((resolve) => (timer = setTimeout(resolve, ms)));
    ping.catch(noop); // its failure after the wait is the next command's to report
    try {
      await Promise.race([ping, waited]);
    } finally {
      clearTimeout(timer);
    }
  }

  /**
   * Refuses a standalone connection to a Cluster node (ConfigError): it would get MOVED for the keys of every
   * other node's slots, so most publishes would fail and subscribe could not create its groups. A server that
   * will not answer INFO (an ACL without it) is not checked.
   */
  async checkNotClusterNode(client: Client): Promise<void> {
    if (client instanceof Cluster) return;
    const info = await client.info('cluster').catch(() => '');
    if (!/^cluster_enabled:1\b/m.test(info)) return;
    const message = `${this.address} is a Redis Cluster node: give the cluster's nodes as transport.cluster.nodes (a connection to one node gets MOVED for the keys of the others' slots)`;
    throw new ConfigError(message, [{ path: ['transport', 'url'], message }]);
  }

  /** Connects a new client, swallowing later 'error' events (ioredis reconnects by itself). */
  async open(role: Role, onError?: (err: Error) => void): Promise<Client> {
    const client = this.create(role);
    client.on('error', onError ?? noop);
    await this.connect(client);
    return client;
  }
}

function noop(): void {}

/** Replies refusing our credentials. */
const AUTH_REFUSED = /WRONGPASS|NOAUTH|NOPERM|invalid password/i;
/** A cluster seed's reply when it is a standalone server. */
const NOT_CLUSTER = /cluster support disabled/i;
/** The reply to a SELECT of a database the server has not got. */
const DB_REFUSED = /DB index is out of range/i;
/** Connect failures that retrying will not mend. */
const FAIL_AT_ONCE = [AUTH_REFUSED, DB_REFUSED, NOT_CLUSTER];

/** A socket that can hold writes back and send them as one (`net.Socket`'s cork/uncork). */
export interface Corkable {
  cork(): void;
  uncork(): void;
}

/**
 * The socket of a standalone client, for writing several commands as one write. ioredis has no public API
 * for this: it reads `Redis#stream`, marked internal (`@ignore`) by ioredis. A Cluster client has none, and an
 * ioredis without it (or whose `stream` cannot cork) gives undefined: callers must then send the commands
 * without it, each in its own write. test/integration/redis-read-connection.test.ts pins that this ioredis has it.
 */
export function corkable(client: Client): Corkable | undefined {
  const s = (client as { stream?: unknown }).stream;
  if (typeof s !== 'object' || s === null) return undefined;
  const c = s as Partial<Corkable>;
  return typeof c.cork === 'function' && typeof c.uncork === 'function' ? (s as Corkable) : undefined;
}

/**
 * Disconnects `client` and, where ioredis would not, fails the commands it still owes a reply. A client between
 * connection attempts (status 'reconnecting': its socket lost, the next attempt waiting for retryStrategy's
 * delay) keeps the commands in flight when its socket closed, to resend them; `disconnect()` then cancels the
 * reconnect, and since no socket is left to emit 'close', nothing ever flushes them (ioredis 5.11: the same for
 * a Cluster client's offline queue): they stay pending forever. A read connection's blocking XREADGROUP has no
 * command timeout, so the read loop would wait for it forever, and a consumer's close() with it (a read
 * connection killed just before close(); pinned in test/integration/redis-faults-outage.test.ts with Redis down).
 * Here they are rejected as a closed connection's commands are.
 *
 * A Cluster client also holds commands in its delay queue: a command whose node connection closed while the
 * client was 'ready' is sent again after retryDelayOnFailover. When that connection was the last of its pool
 * (a read connection killed, its node clients all connected), the client goes 'reconnecting' with the read
 * there, not in the offline queue. disconnect() then leaves the client 'disconnecting' for good (its pool is
 * empty: no node ends, so neither 'close' nor 'end' comes), and the retry, when it fires, finds the client not
 * ready and queues the read offline, where nothing settles it. So a Cluster client disconnected here queues
 * nothing: a retry still to come is rejected when it fires (after at most retryDelayOnFailover).
 * Pinned in test/integration/redis-cluster-disconnect.test.ts.
 *
 * A standalone client whose new socket is connected but not ready yet (status 'connect': its ready check waits,
 * as it does while a restarted server loads its data) keeps the commands of the socket it lost apart
 * (`prevCommandQueue`), to resend them at 'ready'. When that socket closes, ioredis flushes its offline and
 * command queues, not that one, so those commands would never be settled either. They are rejected here as well
 * (a subscription closed just after a server restart; pinned in redis-faults-outage.test.ts).
 */
export function disconnectNow(client: Client): void {
  const between = client.status === 'reconnecting';
  if (client instanceof Cluster) client.options.enableOfflineQueue = false;
  client.disconnect();
  const err = new Error('Connection is closed (disconnected while it was reconnecting)');
  if (between) (client as unknown as { flushQueue?: (err: Error) => void }).flushQueue?.(err);
  rejectUnsent(client, err);
}

/** Commands owed a reply that ioredis kept to resend once a reconnect is ready (`prevCommandQueue`, internal to ioredis). */
interface ResendQueue {
  prevCommandQueue?: { shift(): { command: { reject(err: Error): void } } | undefined } | null;
}

/** Rejects the commands `client` kept to resend at its next 'ready' (none unless it lost a socket while ready). */
function rejectUnsent(client: Client, err: Error): void {
  const c = client as unknown as ResendQueue;
  const queue = c.prevCommandQueue;
  if (!queue) return;
  c.prevCommandQueue = null;
  for (let item = queue.shift(); item !== undefined; item = queue.shift()) item.command.reject(err);
}

/**
 * Waits before a write `isTransientWriteError` refused is tried again (`backoffDelay` of the attempt that
 * failed): 50 ms, doubling up to 2 s. XACKs and a subscription's retry/DLQ writes use it.
 */
export const TRANSIENT_RETRY: BackoffOptions = { initialMs: 50, maxMs: 2000, multiplier: 2, jitter: 0 };

/**
 * A write Redis refused for now, or that never reached it: a connection problem, or a server-side state that
 * passes (OOM at maxmemory, a replica or a loading server, a failover, a busy script, a failing RDB save).
 * Retrying the same write later can succeed; other refusals (WRONGTYPE, NOPERM) will not.
 */
export function isTransientWriteError(err: unknown): boolean {
  return isConnectionProblem(err) || (err instanceof Error && /^(OOM|READONLY|LOADING|TRYAGAIN|BUSY|NOREPLICAS|MISCONF)\b/.test(err.message));
}

/**
 * Whether an error is about reaching Redis (rather than a Redis error reply about the command): the connection,
 * or a Cluster that cannot serve the slot now (CLUSTERDOWN, MASTERDOWN, ioredis giving up its redirections).
 * Those are one class for callers (ConnectionError): during a Cluster outage a publish failed as TransportError
 * (CLUSTERDOWN) or ConnectionError (the dead node) by chance.
 */
export function isConnectionProblem(err: unknown): boolean {
  if (!(err instanceof Error)) return false;
  const m = err.message;
  return (
    m.includes('Connection is closed') ||
    m.includes('Command aborted due to connection close') ||
    m.includes('Command timed out') ||
    m.includes("Stream isn't writeable") ||
    m.includes('enableOfflineQueue') ||
    m.includes("isn't ready") ||
    m.includes('ECONNREFUSED') ||
    m.includes('ECONNRESET') ||
    m.includes('EPIPE') ||
    m.includes('Reached the max retries') ||
    m.includes('Too many Cluster redirections') ||
    /^(CLUSTERDOWN|MASTERDOWN)\b/.test(m)
  );
}

/**
 * A connection problem (`isConnectionProblem`) that proves the command never took effect: refused before it
 * was sent (no writable connection, the server unreachable) or by a Cluster that cannot serve the slot. Any
 * other connection problem of a write is ambiguous: Redis may have applied it before the reply was lost.
 */
export function neverApplied(err: unknown): boolean {
  if (!(err instanceof Error)) return false;
  const m = err.message;
  return m.includes("Stream isn't writeable") || m.includes('enableOfflineQueue') || m.includes("isn't ready") || m.includes('ECONNREFUSED') || /^(CLUSTERDOWN|MASTERDOWN)\b/.test(m);
}
