/**
 * Loads the benchmark-only addon (benchmarking/native: `latencyFloor`, the machine's latency floor), from its
 * node-gyp build path only: it is never prebuilt, shipped or loaded by the package. `npm run build:native`
 * builds it, and `npm run benchmark` when it is missing or older than its sources (scripts/build-bench.mjs).
 * `EVENTLANE_NATIVE=0` keeps it unloaded too: no native code runs in the process.
 */
import { existsSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { packageRoot } from '../../native/loader.js';

export interface LatencyFloorOptions {
  /** Events per second, sent open loop; 0: one burst, back to back, after the consumers idled `quietMs`. */
  rate: number;
  /** Events sent. */
  count: number;
  /** Partitions, with one consumer thread each (events go round-robin). */
  consumers: number;
  /** A consumer spins this long on an empty ring before it sleeps on the futex (the transport's `spinUs`). @default 0 */
  spinUs?: number;
  /** Pins the sending (calling) thread to `cpus[0]` and consumer k to `cpus[1 + k % (cpus.length - 1)]`. */
  cpus?: readonly number[];
  /** A burst (rate 0): the consumer threads idle this long (ms, up to 10,000) before it, asleep in their wait. @default 0 */
  quietMs?: number;
}

export interface LatencyFloorResult {
  /** `latencyNs[i]`: event i, from its intended send time (a burst: its push) to its pop in the consumer thread, in ns. */
  latencyNs: Float64Array;
  /** Events popped, duplicates included. */
  received: number;
  /** Distinct events popped. */
  unique: number;
  /** From the first send to the last arrival, in ns (a burst's window, without the idle time before it). */
  windowNs: number;
}

interface FloorBinding {
  latencyFloor(rate: number, count: number, consumers: number, spinUs: number, cpus?: number[], quietMs?: number): LatencyFloorResult;
  abi?: number;
}

/** The interface version this code speaks: floor.cc exports the same `abi`, and a binary exporting another is not loaded. */
const FLOOR_ABI = 1;

/** The built addon, relative to the package root (node-gyp's output for benchmarking/native/binding.gyp). */
export const FLOOR_ADDON = join('benchmarking', 'native', 'build', 'Release', 'eventlane_floor.node');
/** Why scripts/build-bench.mjs could not build the addon, when it could not (a node-gyp rebuild removes it). */
const FLOOR_UNBUILT = join('benchmarking', 'native', 'build', 'unbuilt.txt');

/** Why the addon at `root` is missing: the build's failure when scripts/build-bench.mjs recorded one. */
function notBuilt(root: string): string {
  const failure = join(root, FLOOR_UNBUILT);
  if (existsSync(failure)) return `${FLOOR_ADDON} could not be built: ${readFileSync(failure, 'utf8').trim()}`;
  return `${FLOOR_ADDON} is not built (npm run build:native builds it)`;
}

const req = createRequire(import.meta.url);
let binding: FloorBinding | null | undefined;
let loadError: string | undefined;

/** The benchmark addon, or null when it is not built or does not load (the reason: `floorLoadError()`). */
export function loadFloorBinding(): FloorBinding | null {
  if (binding !== undefined) return binding;
  binding = null;
  if (process.env['EVENTLANE_NATIVE'] === '0') {
    loadError = 'EVENTLANE_NATIVE=0';
    return binding;
  }
  try {
    const root = packageRoot();
    const path = join(root, FLOOR_ADDON);
    if (!existsSync(path)) throw new Error(notBuilt(root));
    const b = req(path) as FloorBinding;
    if (b.abi !== FLOOR_ABI) throw new Error(`${FLOOR_ADDON} speaks interface ${b.abi ?? 'none'}, this code ${FLOOR_ABI}: rebuild it (npm run build:native)`);
    binding = b;
  } catch (err) {
    loadError = (err as Error).message.split('\n')[0];
  }
  return binding;
}

/** Why the benchmark addon did not load, or undefined when it did. */
export function floorLoadError(): string | undefined {
  return loadFloorBinding() ? undefined : loadError;
}

/**
 * The machine's latency floor: the partition core driven by C++ threads only. The calling thread sends `count`
 * events at `rate` (open loop, each due at t0 + i / rate on CLOCK_MONOTONIC, pushed into partition
 * i % consumers; rate 0: in one burst after the consumers idled `quietMs`, each timed from its push), and one
 * C++ consumer thread per partition pops them with the transport's bounded spin-then-futex wait and takes each
 * one's latency from its send time first thing. No JavaScript runs on the path. Blocks the calling thread for
 * count / rate seconds (a burst: `quietMs` and the burst). Throws when the benchmark addon is not loaded, when
 * an event has not arrived 10 s after the last send, or when a thread cannot be pinned.
 */
export function latencyFloor(o: LatencyFloorOptions): LatencyFloorResult {
  const b = loadFloorBinding();
  if (!b) throw new Error(`latencyFloor needs the benchmark addon, which did not load (${loadError ?? 'unknown'})`);
  return b.latencyFloor(o.rate, o.count, o.consumers, o.spinUs ?? 0, o.cpus === undefined ? undefined : [...o.cpus], o.quietMs ?? 0);
}
