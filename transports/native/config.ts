/**
 * Config of the native transport (`transport: { type: 'native', ... }`) and of its subscriptions.
 */
import { z } from 'zod';
import { DEFAULT_MAX_EVENT_BYTES, withRemovedOptions } from '../../src/config.js';
import { cpuListProblem } from './affinity.js';

/** Largest `maxEventBytes`: the arena, four times it, is at most 256 MiB. */
const MAX_EVENT_BYTES = 64 * 1024 * 1024;

/**
 * Payload bytes per ring (rounded up to a power of two by the core): 128 per event slot and four times the
 * largest event (the default one when unset); at most 256 MiB, since a pop of a fuller ring could be more text
 * than one JavaScript string holds (~512 Mi characters).
 */
export function arenaBytesFor(capacity: number, maxEventBytes: number = DEFAULT_MAX_EVENT_BYTES): number {
  const floor = Math.max(1024, 4 * maxEventBytes);
  return Math.min(2 ** 28, Math.max(floor, capacity * 128));
}

/**
 * Most events one consumer pops at once from a ring of `capacity` slots: one per handler it may run
 * (`concurrency`), else up to a quarter of the ring (at most 1024), so a consumer holding a popped batch
 * leaves most of the ring to publishers; never more than the ring.
 */
export function popBatchFor(capacity: number, concurrency: number): number {
  return Math.min(capacity, Math.max(concurrency, Math.min(1024, Math.max(1, Math.floor(capacity / 4)))));
}

const nativeConfigObject = z
  .object({
    type: z.literal('native'),
    /**
     * Name of an in-process broker: transports in one process opened with the same name share the core,
     * topics and consumer groups (the first one opened sizes its rings). Unnamed transports are private to
     * their bus. @default none
     */
    name: z.string().min(1).max(200).optional(),
    /**
     * Partitions per event type (one ring each, per consumer group). On a named broker the first bus to use a
     * type records its count there; a bus that sets none uses the recorded count, and one that sets another is
     * refused with a ConfigError. @default the count recorded on the broker, else 1
     */
    partitions: z.number().int().min(1).max(4096).optional(),
    /** Events per ring; rounded up to a power of two. @default 16384 */
    capacity: z.number().int().min(2).max(16_777_216).default(16_384),
    /** What a publish does when a ring is full. @default 'block' */
    backpressure: z.enum(['block', 'drop-newest', 'drop-oldest', 'error']).default('block'),
    /** How long a `block` publish waits for room before rejecting with `TimeoutError`. @default 30000 */
    publishTimeoutMs: z.number().int().min(0).default(30_000),
    /** `'auto'`: the addon when it loads, else the JS fallback (one warning). @default 'auto' */
    implementation: z.enum(['auto', 'native', 'js']).default('auto'),
    /**
     * Largest encoded event, bytes, at most 64 MiB; each ring's payload arena is sized to hold four of them
     * (and 128 bytes per slot). @default 1 MiB, as on every transport (on a named broker opened with a smaller
     * one, the broker's: a quarter of its arena)
     */
    maxEventBytes: z.number().int().min(1).max(MAX_EVENT_BYTES, `must be at most ${MAX_EVENT_BYTES} (64 MiB): a ring's arena holds four of the largest event, at most 256 MiB`).optional(),
    /** Events kept per partition for groups created later with `startFrom: '0'`; 0 keeps none. @default 10000 */
    maxLen: z.number().int().min(0).default(10_000),
    /** Dead letters kept per group. @default 10000 */
    maxDeadLetters: z.number().int().min(0).default(10_000),
  })
  .strict()
  .transform((c) => ({ ...c, arenaBytes: arenaBytesFor(c.capacity, c.maxEventBytes) }));

export const nativeConfigSchema = withRemovedOptions(nativeConfigObject, {
  arenaBytes: "each ring's arena is sized from capacity and maxEventBytes (four of the largest event, 128 bytes per slot)",
  retain: 'maxLen (events kept per partition for groups created later with startFrom 0)',
  batchSize: 'a consumer pops one event per handler slot (concurrency), else up to a quarter of the ring (at most 1024)',
  spinUs: 'worker consumers sleep on a futex as soon as their ring is empty',
});

export type NativeTransportConfig = z.input<typeof nativeConfigSchema>;
/** The native transport's config: the options given, with their defaults, and the ring arena derived from them. */
export type ResolvedNativeConfig = z.output<typeof nativeConfigSchema>;

export const nativeSubscribeSchema = z
  .object({
    /** Consumer threads for this subscription; partitions are spread over them. Needs `handler`. @default none: the main thread */
    workers: z.number().int().min(1).max(256).optional(),
    /** Module (file URL or absolute path) whose default export is `async (event, ctx) => {}`. @default none */
    handler: z.union([z.string().min(1), z.instanceof(URL)]).optional(),
    /** Passed (structured-cloned) to the module's optional `setup(data)` export before consuming. @default none */
    workerData: z.unknown().optional(),
    /**
     * Pins worker thread k to CPU `cpus[k % cpus.length]` (Linux, with the addon; without it the threads
     * run unpinned, with one warning). Keep them off the publishing thread's CPU (`pinCurrentThread`).
     * @default none: threads run where the OS puts them
     */
    cpus: z
      .custom<number[]>((v) => cpuListProblem(v) === undefined, { error: (issue) => cpuListProblem(issue.input) })
      // A copy: a thread restarted later is pinned as subscribe was told, whatever the caller does to its array.
      .transform((v) => [...v])
      .optional(),
  })
  .strict();

export type NativeSubscribeOptions = z.input<typeof nativeSubscribeSchema>;
