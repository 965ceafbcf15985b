/**
 * Bus configuration: a zod schema, so a bad config fails with the field named.
 */
import { z } from 'zod';
import { ConfigError, type ValidationIssue } from './errors.js';
import { closestKey, keysAt } from './config-suggest.js';
import type { BatcherOptions } from './batcher.js';
import type { BackoffOptions, TransportCapabilities } from './transport.js';

/** Options a schema refuses by name, by dotted path within its input: what replaces each. */
export type RemovedOptions = Readonly<Record<string, string>>;

const removedBySchema = new WeakMap<z.ZodType, RemovedOptions>();

/**
 * Marks options `schema` does not take: `parseConfig` refuses each one given (whatever its value) with a
 * `ConfigError` whose issue names it and says what replaces it, as it refuses an unknown key. Returns `schema`.
 */
export function withRemovedOptions<S extends z.ZodType>(schema: S, removed: RemovedOptions): S {
  removedBySchema.set(schema, removed);
  return schema;
}

/** The options `schema` refuses by name (`withRemovedOptions`), with what replaces each. */
export function removedOptionsOf(schema: z.ZodType): RemovedOptions {
  return removedBySchema.get(schema) ?? {};
}

/** The removed options present in `input`, as issues (paths relative to `input`). */
function removedIssues(input: unknown, removed: RemovedOptions | undefined): ValidationIssue[] {
  if (removed === undefined) return [];
  const found: ValidationIssue[] = [];
  for (const [dotted, instead] of Object.entries(removed)) {
    const path = dotted.split('.');
    let at: unknown = input;
    for (const key of path.slice(0, -1)) at = at !== null && typeof at === 'object' ? (at as Record<string, unknown>)[key] : undefined;
    if (at !== null && typeof at === 'object' && Object.hasOwn(at, path[path.length - 1]!)) {
      found.push({ path, message: `removed option: ${instead}`, code: 'unrecognized_keys' });
    }
  }
  return found;
}

export const batchingSchema = z
  .object({
    /** Most events in one batch (and one unit). @default 4000 */
    maxEvents: z.number().int().min(1).max(1_000_000).default(4000),
    /** Most encoded bytes in one batch (where sizes are known). @default 4 MiB */
    maxBytes: z
      .number()
      .int()
      .min(1)
      .default(4 * 1024 * 1024),
    /** 0: adaptive (leave as soon as a write slot is free). >0: linger this long to fill a batch. @default 0 */
    maxWaitMs: z.number().min(0).max(60_000).default(0),
    /** Events buffered in the client before `onFull` applies. @default 100000 */
    maxPendingEvents: z.number().int().min(1).default(100_000),
    /** When the buffer is full: `'wait'` for room, or `'reject'` with `BackpressureError`. @default 'wait' */
    onFull: z.enum(['wait', 'reject']).default('wait'),
  })
  .strict();

/**
 * The largest event (encoded bytes, with its key, ids and headers) every built-in transport that stores events
 * takes unless configured: one default, so a change of transport in config does not change what publish takes.
 */
export const DEFAULT_MAX_EVENT_BYTES = 1024 * 1024;

/** Each retry waits twice as long as the one before, up to `maxMs`. */
export const BACKOFF_MULTIPLIER = 2;
/** Each delay is spread by up to this fraction either way, so retries of events that failed together spread out. */
export const BACKOFF_JITTER = 0.2;

export const backoffSchema = z
  .object({
    /** Delay before the first retry; each later one doubles it (spread by up to 20% either way). @default 100 */
    initialMs: z.number().min(0).default(100),
    /** Longest delay between attempts. @default 30000, or `initialMs` when that is longer */
    maxMs: z.number().min(0).optional(),
  })
  .strict()
  .transform((b, ctx): BackoffOptions => {
    if (b.maxMs !== undefined && b.maxMs < b.initialMs) ctx.addIssue({ code: 'custom', path: ['maxMs'], message: `must be at least initialMs (${b.initialMs}), the first delay` });
    return { initialMs: b.initialMs, maxMs: b.maxMs ?? Math.max(30_000, b.initialMs), multiplier: BACKOFF_MULTIPLIER, jitter: BACKOFF_JITTER };
  });

export const busConfigSchema = withRemovedOptions(
  z
    .object({
      /** Name of this service; written as each event's `source` and used in consumer names. */
      service: z.string().min(1).max(200),
      /** Transport block: `{ type: 'memory' | 'noop' | 'redis-streams' | 'native' | <registered>, ...options }`. */
      transport: z
        .object({
          /** `'memory'`, `'native'`, `'redis-streams'`, `'noop'` or a transport registered with `registerTransport`. */
          type: z.string().min(1),
        })
        .passthrough(),
      batching: batchingSchema.default(batchingSchema.parse({})),
      /** How long `close()` (of the bus or of one subscription) waits for in-flight handlers. @default 30000 */
      drainTimeoutMs: z.number().int().min(0).default(30_000),
      /**
       * Validate payloads again on the consumer side (events written by other producers); not for types whose
       * schema transforms values (see `EventMap.transforming`). @default true
       */
      validateOnConsume: z.boolean().default(true),
    })
    .strict(),
  {
    'batching.maxInFlight': "writes in flight are the transport's (capabilities.maxInFlight: Redis Streams 32 x pool.size, native 64)",
  },
);

export type BatchingConfig = z.input<typeof batchingSchema>;
export type ResolvedBatching = z.output<typeof batchingSchema>;

export const subscribeOptionsSchema = withRemovedOptions(
  z
    .object({
      group: z.string().min(1).max(200),
      consumer: z.string().min(1).max(200).optional(),
      concurrency: z.number().int().min(1).max(100_000).default(1),
      startFrom: z.enum(['$', '0']).default('$'),
      maxDeliveries: z.number().int().min(1).max(1000).default(5),
      retry: z
        .object({
          /** When each retry runs (the options below). */
          backoff: backoffSchema.default(backoffSchema.parse({})),
        })
        .strict()
        .default({ backoff: backoffSchema.parse({}) }),
    })
    .passthrough(),
  {
    drainTimeoutMs: "a subscription's close() waits up to the bus's drainTimeoutMs",
    'retry.backoff.multiplier': `each retry waits ${BACKOFF_MULTIPLIER}x the one before, up to retry.backoff.maxMs (for a constant delay, give maxMs = initialMs)`,
    'retry.backoff.jitter': `delays are spread by up to ${BACKOFF_JITTER * 100}% either way`,
  },
);

/** `bus.deadLetters()` options. */
export const deadLettersOptionsSchema = z
  .object({
    group: z.string().min(1).optional(),
    limit: z.number().int().min(1).max(10_000_000).optional(),
  })
  .strict();

/** `bus.idle()` options. */
export const idleOptionsSchema = z
  .object({
    type: z.string().optional(),
    timeoutMs: z.number().int().min(0).max(2_147_483_647).optional(),
  })
  .strict();

export type ResolvedBackoff = BackoffOptions;

/** Turns zod issues into ours. */
export function toIssues(error: z.ZodError): ValidationIssue[] {
  return error.issues.map((i) => ({ path: i.path.map((p) => (typeof p === 'symbol' ? String(p) : p)), message: i.message, code: i.code }));
}

/** "a.b: message; c: message" */
export function formatIssues(issues: ValidationIssue[]): string {
  return issues.map((i) => `${i.path.length ? i.path.join('.') : '(root)'}: ${i.message}`).join('; ');
}

/**
 * Parse `input` with `schema`, throwing a `ConfigError` that names each bad field under `where`. An option the
 * schema marks removed (`withRemovedOptions`) is refused with what replaces it, never ignored; an unknown one
 * names the option it most likely misspells.
 */
export function parseConfig<S extends z.ZodType>(schema: S, input: unknown, where: string): z.output<S> {
  return parseWithNames(schema, input, where, []);
}

/**
 * `parseConfig` for a transport's own subscribe options (what `subscribe` passes on past the bus's options): an
 * unknown key is also compared with the bus's subscribe option names, so a misspelt `concurrency` is named.
 */
export function parseTransportSubscribeOptions<S extends z.ZodType>(schema: S, input: unknown, where: string): z.output<S> {
  return parseWithNames(schema, input, where, keysAt(subscribeOptionsSchema, []));
}

function parseWithNames<S extends z.ZodType>(schema: S, input: unknown, where: string, alsoKnown: readonly string[]): z.output<S> {
  const removed = removedIssues(input, removedBySchema.get(schema));
  const res = schema.safeParse(input);
  if (res.success && removed.length === 0) return res.data;
  const raw = res.error?.issues ?? [];
  const named = new Set(removed.map((i) => i.path.join('.')));
  const unknownKey = (path: readonly PropertyKey[], key: string): string => {
    const known = path.length === 0 ? [...keysAt(schema, path), ...alsoKnown] : keysAt(schema, path);
    const meant = closestKey(key, known);
    return meant === undefined ? 'Unrecognized key' : `Unrecognized key; did you mean \`${meant}\`?`;
  };
  const issues = [
    ...removed,
    ...toIssues(res.error ?? new z.ZodError([]))
      // zod reports unknown keys as one issue at their parent: name each key in the path, as any other field is.
      .flatMap((issue, n) => {
        const zi = raw[n]!;
        return zi.code === 'unrecognized_keys' ? zi.keys.map((k) => ({ ...issue, path: [...issue.path, k], message: unknownKey(zi.path, k) })) : [issue];
      })
      .filter((i) => !named.has(i.path.join('.'))),
  ].map((i) => ({ ...i, path: where ? [where, ...i.path] : i.path }));
  // Each issue names its full path ("transport.partitions", "subscribe options.group"), `where` first.
  throw new ConfigError(`Invalid config: ${formatIssues(issues)}`, issues);
}

export function batcherOptions(b: ResolvedBatching, caps: Pick<TransportCapabilities, 'maxInFlight' | 'units'>): BatcherOptions {
  const units = caps.units;
  return {
    ...b,
    maxInFlight: caps.maxInFlight,
    maxUnitEvents: Math.min(b.maxEvents, units?.maxEvents ?? Infinity),
    maxUnitBytes: Math.min(b.maxBytes, units?.maxBytes ?? Infinity),
    partialUnits: units?.partial === true,
  };
}
