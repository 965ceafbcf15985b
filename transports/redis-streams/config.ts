/**
 * Configuration of the Redis Streams transport: the `transport` block of the bus config and the
 * transport-specific subscribe options. Both are zod schemas, so a bad value fails with a
 * `ConfigError` naming the field (`transport.pool.size: ...`).
 */
import { z } from 'zod';
import { DEFAULT_MAX_EVENT_BYTES, parseTransportSubscribeOptions, withRemovedOptions } from '../../src/config.js';

/**
 * What ioredis can connect to: `redis://` or `rediss://` with a host, a numeric port and a numeric db, or a
 * Unix socket path. Anything else is refused here, as config: ioredis would throw a raw TypeError for a bad
 * port, and wait out the connect timeout for `http://x`.
 */
function isRedisUrl(s: string): boolean {
  if (s.startsWith('/')) return true;
  let u: URL;
  try {
    u = new URL(s);
  } catch {
    return false;
  }
  return (u.protocol === 'redis:' || u.protocol === 'rediss:') && u.hostname !== '' && /^(\/\d*)?$/.test(u.pathname);
}

/**
 * A cluster seed given as a string: `host:port`, `host` (port 6379), `[ipv6]:port` or a `redis://` /
 * `rediss://` URL with no database. Anything else (`http://x`, a typo'd port) is refused here, as config, not
 * after the connect timeout.
 */
function isSeed(s: string): boolean {
  if (/^rediss?:\/\//i.test(s)) return isRedisUrl(s) && /^\/?$/.test(new URL(s).pathname);
  const m = /^(\[[0-9a-f:.]+\]|[^\s/:@[\]]+)(?::(\d{1,5}))?$/i.exec(s);
  return m !== null && (m[2] === undefined || (Number(m[2]) >= 1 && Number(m[2]) <= 65535));
}

const hostPort = z.union([
  z.string().min(1).refine(isSeed, 'must be host:port, host, [ipv6]:port or redis://[user:pass@]host:port (rediss:// for TLS), with no /db: a cluster has database 0 only'),
  z.object({ host: z.string().min(1), port: z.number().int().min(1).max(65535) }).strict(),
]);

export const topicSchema = z
  .object({
    /** Partitions (streams) of this event type, as `partitions` of the transport. @default the transport's `partitions` */
    partitions: z.number().int().min(1).max(4096).optional(),
    /** Approximate retention per partition stream, in entries (`MAXLEN ~`). 0 keeps everything. */
    maxLen: z.number().int().min(0).optional(),
    /** Approximate retention by age (`MINID ~ now-age`); replaces `maxLen` when set. */
    minIdAgeMs: z.number().int().min(1).optional(),
  })
  .strict();

const redisStreamsObject = z
  .object({
    type: z.literal('redis-streams'),
    /**
     * Where to connect: `redis://[user:pass@]host:port[/db]`, `rediss://...` for TLS, or a Unix socket path. Its
     * user and password are the credentials; credentials kept out of the URL go in `redisOptions`.
     * @default 'redis://127.0.0.1:6379' (none with `cluster`, or with Sentinel in `redisOptions`)
     */
    url: z.string().min(1).refine(isRedisUrl, 'must be redis://[user:pass@]host[:port][/db], rediss://... (TLS) or a Unix socket path').optional(),
    /**
     * Redis Cluster: seed nodes; ioredis discovers the rest. Credentials and TLS of `redis://user:pass@...` /
     * `rediss://` seed URLs apply to every node.
     */
    cluster: z
      .object({
        /** Seed nodes: `host:port`, `host`, `[ipv6]:port`, `redis://` URLs, or `{ host, port }`. */
        nodes: z.array(hostPort).min(1),
        /** Extra ioredis ClusterOptions (its `redisOptions` apply to every node; the transport's own settings win). */
        options: z
          .record(z.string(), z.unknown())
          .refine((o) => o['keyPrefix'] === undefined && (o['redisOptions'] as Record<string, unknown> | undefined)?.['keyPrefix'] === undefined, {
            message: 'keyPrefix is not supported here; use transport.prefix',
          })
          .optional(),
      })
      .strict()
      .optional(),
    /**
     * Extra ioredis options for every connection (advanced; the transport's own settings win): Sentinel
     * (`sentinels`, `name`, with no `url`), TLS options (`tls`: a CA, client certificates), credentials kept out
     * of the URL (`username`, `password`; those in `url` or in cluster seed URLs win). Not `keyPrefix`: use
     * `prefix` (the transport names its keys itself and matches them in replies). @default none
     */
    redisOptions: z
      .record(z.string(), z.unknown())
      .refine((o) => o['keyPrefix'] === undefined, { message: 'keyPrefix is not supported here; use transport.prefix' })
      .optional(),
    /** Key prefix: streams are `<prefix>:{<type>:<partition>}`. @default 'el' */
    prefix: z
      .string()
      .min(1)
      .max(100)
      .regex(/^[^{}\s]+$/, 'must not contain braces or whitespace')
      .default('el'),
    /**
     * Partitions (streams) per event type. The first bus to use a type records its count with the streams
     * (`<prefix>:{<type>:0}:meta`); a bus that sets none uses the recorded count, and one that sets another is
     * refused with a ConfigError (raise a count with `admin.setPartitions`). @default the recorded count, else 1
     */
    partitions: z.number().int().min(1).max(4096).optional(),
    /**
     * How often the recorded partition counts of the bus's types are read again, so that a raised count reaches
     * running producers and consumers (a subscription's reclaim pass, every `minIdleMs / 2`, reads them when
     * that is sooner). @default 15000
     */
    partitionsCheckMs: z.number().int().min(10).max(3_600_000).default(15_000),
    /** Per-type overrides of partitions and trimming (`{ partitions?, maxLen?, minIdAgeMs? }`). @default {} */
    topics: z.record(z.string(), topicSchema).default({}),
    /** `'batch'`: one stream entry per publish unit (many events). `'event'`: one entry per event (interop). @default 'batch' */
    entryMode: z.enum(['batch', 'event']).default('batch'),
    /** Approximate retention per partition stream, in entries (`MAXLEN ~`). 0 keeps everything. @default 1000000 */
    maxLen: z.number().int().min(0).default(1_000_000),
    /** Approximate retention by age (`MINID ~`); replaces `maxLen` when set. @default none */
    minIdAgeMs: z.number().int().min(1).optional(),
    /** Approximate retention of each partition's dead-letter stream (`MAXLEN ~`), in entries; 0 keeps everything. @default 100000 */
    maxDeadLetters: z.number().int().min(0).default(100_000),
    /** The publishing connections. */
    pool: z
      .object({
        /** Publish connections (never used for blocking reads); the batcher keeps 32 writes in flight per connection. @default 2 */
        size: z.number().int().min(1).max(64).default(2),
      })
      .strict()
      .default({ size: 2 }),
    /**
     * How long a write (or any non-blocking command) may wait, also while Redis is unreachable; a blocking read
     * may be half of it late past its BLOCK. Connecting is bounded by it too: opening a connection (for
     * `createEventBus`, a subscription, the admin API) that takes longer rejects with `ConnectionError`.
     * @default 10000
     */
    commandTimeoutMs: z.number().int().min(1).max(600_000).default(10_000),
    /** Largest encoded event accepted, bytes. @default 1 MiB, as on every transport */
    maxEventBytes: z
      .number()
      .int()
      .min(1)
      .max(512 * 1024 * 1024)
      .default(DEFAULT_MAX_EVENT_BYTES),
    /**
     * Replicas that must hold a write before its publishes resolve: `WAIT <count> <timeoutMs>` follows the
     * writes on their connection. Unset: a publish resolves once the master stored it (a master that dies
     * before replicating loses it). Too few acknowledgements in time reject with `ReplicationError`. @default none
     */
    waitForReplicas: z
      .object({
        /** Replicas that must acknowledge each write. */
        count: z.number().int().min(1).max(100),
        /** How long WAIT waits for them; below `commandTimeoutMs`. @default 1000 */
        timeoutMs: z.number().int().min(1).max(600_000).default(1_000),
      })
      .strict()
      .optional(),
  })
  .strict()
  .transform((c, ctx) => {
    for (const issue of connectionIssues(c)) ctx.addIssue({ code: 'custom', ...issue });
    const seed = c.cluster ? seedAuth(c.cluster.nodes) : undefined;
    if (typeof seed === 'string') ctx.addIssue({ code: 'custom', path: ['cluster', 'nodes'], message: seed });
    if (seed === undefined || typeof seed === 'string') return { ...c, username: undefined, password: undefined, tls: undefined };
    return { ...c, username: seed.username, password: seed.password, tls: seed.tls, cluster: { ...c.cluster!, nodes: seed.nodes } };
  });

export const redisStreamsConfigSchema = withRemovedOptions(redisStreamsObject, {
  host: 'give url: redis://host:port',
  port: 'give url: redis://host:port',
  db: 'give the database in url: redis://host:port/db',
  tls: 'give a rediss:// url (or rediss:// cluster seeds); TLS options go in redisOptions.tls',
  dlqMaxLen: 'maxDeadLetters (MAXLEN ~ of each dead-letter stream)',
  username: 'give the user in url: redis://user:pass@host:port (with cluster, in the seed URLs), or in redisOptions.username',
  password: 'give the password in url: redis://user:pass@host:port (with cluster, in the seed URLs), or in redisOptions.password',
  connectTimeoutMs: 'connecting is bounded by commandTimeoutMs',
});

/** The connection settings `connectionIssues` checks. */
interface ConnectionSettings {
  url?: string | undefined;
  cluster?: unknown;
  commandTimeoutMs: number;
  waitForReplicas?: { timeoutMs: number } | undefined;
}

/**
 * What is wrong with the connection settings taken together, in order: where to connect is said once (a second
 * way would be ignored without a word), and WAIT gives up before a command does.
 */
function connectionIssues(c: ConnectionSettings): { path: string[]; message: string }[] {
  const issues: { path: string[]; message: string }[] = [];
  if (c.cluster !== undefined && c.url !== undefined) issues.push({ path: ['url'], message: 'not with cluster (its seed nodes say where to connect)' });
  if (c.waitForReplicas && c.waitForReplicas.timeoutMs >= c.commandTimeoutMs) {
    issues.push({ path: ['waitForReplicas', 'timeoutMs'], message: `must be below commandTimeoutMs (${c.commandTimeoutMs})` });
  }
  return issues;
}

/**
 * Credentials and TLS written into cluster seed URLs (`redis://user:pass@host:port`, `rediss://` for TLS), to
 * apply to every node: ioredis gives a seed URL's credentials to that seed alone, and the masters it discovers
 * would answer NOAUTH. Returns the seeds as
 * host/port and what they set; a message when seeds disagree; undefined when no seed is such a URL.
 */
function seedAuth(
  nodes: readonly z.output<typeof hostPort>[],
): { nodes: { host: string; port: number }[] | z.output<typeof hostPort>[]; username?: string; password?: string; tls?: true } | string | undefined {
  if (!nodes.some((n) => typeof n === 'string' && /^rediss?:\/\//i.test(n))) return undefined;
  const found = { username: new Set<string>(), password: new Set<string>(), tls: new Set<boolean>() };
  const out: z.output<typeof hostPort>[] = [];
  for (const n of nodes) {
    if (typeof n !== 'string' || !/^rediss?:\/\//i.test(n)) {
      out.push(n);
      continue;
    }
    let u: URL;
    let username: string;
    let password: string;
    try {
      u = new URL(n);
      username = decodeURIComponent(u.username);
      password = decodeURIComponent(u.password);
    } catch {
      return `"${n}" is not a valid redis:// URL (a bad host or a bad %-escape in the credentials)`;
    }
    out.push({ host: u.hostname.replace(/^\[|\]$/g, ''), port: u.port === '' ? 6379 : Number(u.port) });
    if (username !== '') found.username.add(username);
    if (password !== '') found.password.add(password);
    found.tls.add(u.protocol.toLowerCase() === 'rediss:');
  }
  for (const k of ['username', 'password', 'tls'] as const) {
    if (found[k].size > 1) return `the seed URLs give different ${k === 'tls' ? 'schemes (redis:// and rediss://)' : `${k}s`}; every node takes the same`;
  }
  const [username] = found.username;
  const [password] = found.password;
  return { nodes: out, username, password, ...(found.tls.has(true) ? { tls: true as const } : {}) };
}

export type RedisStreamsConfig = z.input<typeof redisStreamsConfigSchema>;
export type ResolvedConfig = z.output<typeof redisStreamsConfigSchema>;

/** Where `c` gives its credentials, for a message that names them. */
export function credentialsOrigin(c: Pick<ResolvedConfig, 'cluster' | 'url'>): string {
  if (c.cluster) return 'the user and password of the seed URLs in transport.cluster.nodes, or of transport.redisOptions';
  return c.url ? 'the user and password in transport.url, or in transport.redisOptions' : 'the user and password in transport.redisOptions';
}

/** Transport-specific subscribe options (next to group, concurrency, maxDeliveries...). */
export const redisSubscribeSchema = withRemovedOptions(
  z
    .object({
      /**
       * Entries idle this long in another consumer's pending list are reclaimed (XAUTOCLAIM); the reclaim pass
       * runs every `minIdleMs / 2`, and this consumer's own entries are kept alive every `minIdleMs / 3`.
       * @default 30000
       */
      minIdleMs: z.number().int().min(10).max(86_400_000).default(30_000),
      /**
       * BLOCK of each XREADGROUP; finite so the loop notices close and dead connections. A read whose reply is
       * `commandTimeoutMs / 2` late past it is abandoned and its connection replaced. @default 2000
       */
      blockMs: z.number().int().min(1).max(60_000).default(2_000),
      /**
       * Events held locally (read but not finished) before the loop stops reading; a read asks for at most
       * this many entries. Near `concurrency` (e.g. `2 * concurrency`), members of a group share a burst of
       * slow events instead of the first reader taking it all, at the cost of more reads per event.
       * @default max(concurrency, 8000)
       */
      prefetch: z.number().int().min(1).max(10_000_000).optional(),
      /**
       * Consumers of the group idle longer than this and holding no pending entries are deleted
       * (XGROUP DELCONSUMER) by the reclaim loop, so restarts with new names do not pile up. 0: never.
       * @default 86400000 (24 h)
       */
      deleteIdleConsumersMs: z.number().int().min(0).default(86_400_000),
    })
    .strict(),
  {
    readCount: 'a read asks for at most max(1000, concurrency) entries, and no more than prefetch',
    claimCount: 'the reclaim scans a tenth of the read size (max(1000, concurrency), at most prefetch) per call',
    reclaimIntervalMs: 'the reclaim pass runs every minIdleMs / 2',
    watchdogMs: 'a read is abandoned once its reply is commandTimeoutMs / 2 late past blockMs',
  },
);

export type RedisSubscribeOptions = z.input<typeof redisSubscribeSchema>;

/** A subscription's options: those given, with their defaults, and the sizes and periods derived from them. */
export interface ResolvedSubscribeOptions extends Omit<z.output<typeof redisSubscribeSchema>, 'prefetch'> {
  /** Events held (read but not finished) before reading pauses. */
  readonly prefetch: number;
  /** Most entries one XREADGROUP asks for. */
  readonly readCount: number;
  /** Entries one reclaim call (XPENDING) scans. */
  readonly claimCount: number;
  /** Period of the reclaim pass. */
  readonly reclaimIntervalMs: number;
  /** How late past its BLOCK a read's reply may be before its connection is replaced. */
  readonly watchdogMs: number;
}

/**
 * The subscribe options `spec.options` gives (a ConfigError names a bad one), and what derives from them, the
 * subscription's concurrency and the transport's commandTimeoutMs: reads fill every handler slot at once (at
 * least 1000 entries, as the prefetch allows), the reclaim claims a tenth of a read per call and runs twice per
 * minIdleMs, and a blocking read's reply may be half a command's timeout late.
 */
export function resolveSubscribeOptions(options: Record<string, unknown>, concurrency: number, config: Pick<ResolvedConfig, 'commandTimeoutMs'>): ResolvedSubscribeOptions {
  const o = parseTransportSubscribeOptions(redisSubscribeSchema, options, 'subscribe options');
  const prefetch = o.prefetch ?? Math.max(concurrency, 8000);
  const readCount = Math.min(prefetch, Math.max(1000, concurrency));
  return {
    ...o,
    prefetch,
    readCount,
    claimCount: Math.max(1, Math.floor(readCount / 10)),
    reclaimIntervalMs: Math.max(10, Math.floor(o.minIdleMs / 2)),
    watchdogMs: Math.max(100, Math.floor(config.commandTimeoutMs / 2)),
  };
}
