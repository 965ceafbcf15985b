/**
 * Config of the native transport (`transport: { type: 'native', ... }`) and of its subscriptions.
 */
import { z } from 'zod';
import { cpuListProblem } from './affinity.js';

export const nativeConfigSchema = z
  .object({
    type: z.literal('native'),
    /**
     * Name of an in-process broker: transports in one process opened with the same name share the core,
     * topics and consumer groups. Unnamed transports are private to their bus.
     */
    name: z.string().min(1).max(200).optional(),
    /** Partitions per event type (one ring each, per consumer group). @default 1 */
    partitions: z.number().int().min(1).max(4096).default(1),
    /** Events per ring; rounded up to a power of two. @default 16384 */
    capacity: z.number().int().min(2).max(16_777_216).default(16_384),
    /**
     * Payload bytes per ring (the preallocated arena); rounded up to a power of two. At most 256 MiB: a pop
     * of a fuller ring could be more text than one JavaScript string holds (~512 Mi characters).
     * @default capacity * 128, at least 64 KiB, at most 256 MiB
     */
    arenaBytes: z.number().int().min(1024).max(268_435_456).optional(),
    /** What a publish does when a ring is full. @default 'block' */
    backpressure: z.enum(['block', 'drop-newest', 'drop-oldest', 'error']).default('block'),
    /** How long a `block` publish waits for room before rejecting with `TimeoutError`. @default 30000 */
    publishTimeoutMs: z.number().int().min(0).default(30_000),
    /** `'auto'`: the addon when it loads, else the JS fallback (one warning). @default 'auto' */
    implementation: z.enum(['auto', 'native', 'js']).default('auto'),
    /** Largest encoded event, bytes; at most a quarter of the arena (more is a ConfigError). @default arenaBytes / 4 */
    maxEventBytes: z.number().int().min(1).optional(),
    /** Events kept per partition for groups created later with `startFrom: '0'`; 0 keeps none. @default 10000 */
    retain: z.number().int().min(0).default(10_000),
    /** Dead letters kept per group. @default 10000 */
    maxDeadLetters: z.number().int().min(0).default(10_000),
    /** Most events a consumer pops at once. @default 1024 */
    batchSize: z.number().int().min(1).max(65_536).default(1024),
    /** Worker consumers spin this long on an empty ring before sleeping on a futex; spinning only pays on otherwise idle cores. @default 0 */
    spinUs: z.number().int().min(0).max(10_000).default(0),
  })
  .strict();

export type NativeTransportConfig = z.input<typeof nativeConfigSchema>;
export type ResolvedNativeConfig = z.output<typeof nativeConfigSchema>;

export const nativeSubscribeSchema = z
  .object({
    /** Consumer threads for this subscription; partitions are spread over them. Needs `handler`. */
    workers: z.number().int().min(1).max(256).optional(),
    /** Module (file URL or absolute path) whose default export is `async (event, ctx) => {}`. */
    handler: z.union([z.string().min(1), z.instanceof(URL)]).optional(),
    /** Passed (structured-cloned) to the module's optional `setup(data)` export before consuming. */
    workerData: z.unknown().optional(),
    /**
     * Pins worker thread k to CPU `cpus[k % cpus.length]` (Linux, with the addon; without it the threads
     * run unpinned, with one warning). Keep them off the publishing thread's CPU (`pinCurrentThread`).
     */
    cpus: z
      .custom<number[]>((v) => cpuListProblem(v) === undefined, { error: (issue) => cpuListProblem(issue.input) })
      // A copy: a thread restarted later is pinned as subscribe was told, whatever the caller does to its array.
      .transform((v) => [...v])
      .optional(),
  })
  .strict();

export type NativeSubscribeOptions = z.input<typeof nativeSubscribeSchema>;
