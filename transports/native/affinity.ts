/**
 * Pinning threads to CPUs, through the addon (Linux). On a machine with few cores the kernel tends to wake
 * a consumer thread on the CPU of the thread that woke it, the publisher, where it waits until the
 * publisher's timeslice ends: bursts then queue behind the publisher for milliseconds. Pinning the
 * publishing thread and the consumer threads to different CPUs keeps them apart (docs/benchmarks.md, Burst).
 */
// No zod here: every worker thread imports this module (worker-main.ts), and loading zod would cost each
// thread megabytes of heap (the subscribe option is checked with zod in config.ts).
import { ConfigError } from '../../src/errors.js';
import { loadBinding } from '../../native/loader.js';

/** Highest CPU number accepted (Linux's CPU_SETSIZE is 1024). */
const MAX_CPU = 1023;

/**
 * What is wrong with `cpus` as a list of CPU numbers (`pinCurrentThread`'s argument and the subscribe option
 * `cpus`: a non-empty array of integers in [0, 1023]), or undefined when nothing is.
 */
export function cpuListProblem(cpus: unknown): string | undefined {
  if (!Array.isArray(cpus)) return 'expected an array of CPU numbers';
  if (cpus.length === 0) return 'expected a non-empty array of CPU numbers';
  if (cpus.length > MAX_CPU + 1) return `expected at most ${MAX_CPU + 1} CPU numbers`;
  for (const c of cpus as unknown[]) if (!Number.isInteger(c) || (c as number) < 0 || (c as number) > MAX_CPU) return `CPU numbers are integers in [0, ${MAX_CPU}]`;
  return undefined;
}

/**
 * Pins the calling thread (the main thread, or a worker) to `cpus`. Returns false, changing nothing, when
 * the native addon is not loaded (the JS fallback cannot pin threads) or the platform cannot pin threads
 * (not Linux); throws `ConfigError` for a bad list or one the OS refuses (a CPU outside the process's
 * allowed set).
 * @example pinCurrentThread([0]); // publish from CPU 0; subscribe(..., { workers: 1, cpus: [1] })
 */
export function pinCurrentThread(cpus: readonly number[]): boolean {
  const problem = cpuListProblem(cpus);
  if (problem !== undefined) {
    throw new ConfigError(`pinCurrentThread: ${problem}.`, [{ path: ['cpus'], message: problem }]);
  }
  const b = loadBinding();
  if (!b) return false;
  try {
    return b.setThreadCpus([...cpus]);
  } catch (err) {
    const why = err instanceof Error ? err.message : String(err);
    throw new ConfigError(`Cannot pin this thread to CPUs ${cpus.join(',')}: ${why}`, [{ path: ['cpus'], message: why }]);
  }
}

/** The CPUs the calling thread may run on, or undefined when the addon is not loaded or cannot tell. */
export function currentThreadCpus(): number[] | undefined {
  const cpus = loadBinding()?.threadCpus();
  return cpus !== undefined && cpus.length > 0 ? cpus : undefined;
}
