/**
 * Loads the partition core: the N-API addon (a local `native/build/Release` build, else the shipped
 * `prebuilds/<platform>-<arch>/*.node` via node-gyp-build), or the pure-JS fallback with one logged warning
 * when no binary loads. `EVENTLANE_NATIVE=0` forces the fallback.
 */
import { existsSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { JsCore } from './js/js-core.js';
import type { CoreUsage, PartitionCore, SharedCoreHandle } from './js/core-api.js';

export * from './js/core-api.js';
export { JsCore } from './js/js-core.js';

interface NativeCoreCtor {
  new (capacity: number, arenaBytes: number, attachId?: number): Omit<PartitionCore, 'kind' | 'share' | 'usage'> & { readonly id: number; usage(): [number, number] };
}
interface Binding {
  Core: NativeCoreCtor;
  /** Pins the calling thread to these CPUs: true; false where the platform cannot (not Linux); throws with the OS's reason. */
  setThreadCpus(cpus: number[]): boolean;
  /** The CPUs the calling thread may run on (empty when the platform cannot tell). */
  threadCpus(): number[];
  /** Version of the binding's interface; a binary built from other sources is not used. */
  abi?: number;
}

/**
 * The version of the binding's interface (its exports and their arguments) this code speaks: addon.cc exports
 * the same number as `abi`, and a binary exporting another is not loaded. Both change together whenever that
 * interface does.
 */
const BINDING_ABI = 11;

// @ts-ignore import.meta is rewritten for the CommonJS build (scripts/build.mjs)
const here = dirname(fileURLToPath(import.meta.url));
// @ts-ignore same
const req = createRequire(import.meta.url);

let binding: Binding | null | undefined;
let loadError: Error | undefined;
let warned = false;

/** The package root: the nearest directory above this module whose package.json is eventlane's. */
export function packageRoot(): string {
  let dir = here;
  for (;;) {
    const pkg = join(dir, 'package.json');
    if (existsSync(pkg)) {
      try {
        if (JSON.parse(readFileSync(pkg, 'utf8')).name === 'eventlane') return dir;
      } catch {
        /* keep looking */
      }
    }
    const up = dirname(dir);
    if (up === dir) throw new Error(`eventlane package root not found above ${here}`);
    dir = up;
  }
}

/** The addon, or null when it cannot load (the reason is in `nativeLoadError()`). */
export function loadBinding(): Binding | null {
  if (binding !== undefined) return binding;
  if (process.env['EVENTLANE_NATIVE'] === '0') {
    loadError = new Error('EVENTLANE_NATIVE=0');
    return (binding = null);
  }
  // A local build first (npm run build:native), then the shipped prebuilt binary: a local build made for
  // another Node, or from older sources, must not hide a prebuilt binary that loads.
  const failures: string[] = [];
  let root: string;
  try {
    root = packageRoot();
  } catch (err) {
    loadError = err as Error;
    return (binding = null);
  }
  const local = join(root, 'native', 'build', 'Release', 'eventlane.node');
  const candidates: [string, () => Binding][] = [];
  if (existsSync(local)) candidates.push([local, () => req(local) as Binding]);
  candidates.push(['prebuilt binary', () => (req('node-gyp-build') as (dir: string) => Binding)(root)]);
  for (const [name, load] of candidates) {
    try {
      const b = load();
      if (b.abi !== BINDING_ABI) throw new Error(`it speaks interface ${b.abi ?? 1}, this code ${BINDING_ABI}: rebuild it (npm run build:native)`);
      loadError = undefined;
      return (binding = b);
    } catch (err) {
      failures.push(`${name}: ${(err as Error).message.split('\n')[0]}`);
    }
  }
  loadError = new Error(failures.join('; '));
  binding = null;
  return binding;
}

export function nativeLoadError(): Error | undefined {
  loadBinding();
  return loadError;
}

/** Which implementation `auto` resolves to in this process. */
export function availableImplementation(): 'native' | 'js' {
  return loadBinding() ? 'native' : 'js';
}

class NativeCore implements PartitionCore {
  readonly kind = 'native';
  constructor(private readonly c: InstanceType<NativeCoreCtor>) {}
  get capacity(): number {
    return this.c.capacity;
  }
  get arenaBytes(): number {
    return this.c.arenaBytes;
  }
  get closed(): boolean {
    return this.c.closed;
  }
  createLane(partitions: number): number {
    return this.c.createLane(partitions);
  }
  freeLane(lane: number): boolean {
    return this.c.freeLane(lane);
  }
  usage(): CoreUsage {
    const [lanes, bytes] = this.c.usage();
    return { lanes, bytes };
  }
  push(lane: number, partition: number, bytes: Uint8Array, byteLens: Uint32Array, charLens: Uint32Array, n: number, mode: number): number {
    return this.c.push(lane, partition, bytes, byteLens, charLens, n, mode);
  }
  pop(lane: number, parts: Uint32Array, nParts: number, start: number, max: number, info: Uint32Array, waitUs: number, spinUs: number, offs?: Uint32Array, hold = false, holder = 0): string | null {
    return this.c.pop(lane, parts, nParts, start, max, info, waitUs, spinUs, offs, hold, holder);
  }
  ack(lane: number, partition: number, first: number, count: number): void {
    this.c.ack(lane, partition, first, count);
  }
  takeHeld(lane: number, partition: number, holder = 0): [string, Uint32Array] | null {
    return this.c.takeHeld(lane, partition, holder);
  }
  stats(lane: number, partition: number): number[] {
    return this.c.stats(lane, partition);
  }
  notify(lane: number): void {
    this.c.notify(lane);
  }
  close(): void {
    this.c.close();
  }
  release(): void {
    this.c.release();
  }
  share(lane: number): SharedCoreHandle {
    return { kind: 'native', id: this.c.id, lane };
  }
}

/**
 * Creates a core. `implementation: 'auto'` uses the addon when it loads and otherwise the JS fallback
 * (warning once per process); `'native'` throws when the addon cannot load; `'js'` always uses the fallback.
 */
export function createCore(capacity: number, arenaBytes: number, implementation: 'auto' | 'native' | 'js', warn: (msg: string) => void): PartitionCore {
  if (implementation !== 'js') {
    const b = loadBinding();
    if (b) return new NativeCore(new b.Core(capacity, arenaBytes));
    if (implementation === 'native') throw loadError ?? new Error('native addon unavailable');
    if (!warned) {
      warned = true;
      warn(`eventlane: native addon not loaded (${loadError?.message ?? 'unknown'}); using the pure-JS partition core`);
    }
  }
  return JsCore.create(capacity, arenaBytes);
}

/** Attaches to a core created by another thread of this process. */
export function attachCore(handle: SharedCoreHandle): PartitionCore {
  if (handle.kind === 'js') return JsCore.attach(handle.state);
  const b = loadBinding();
  if (!b) throw loadError ?? new Error('native addon unavailable');
  return new NativeCore(new b.Core(0, 0, handle.id));
}
