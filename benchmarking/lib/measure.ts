/**
 * Resource measurement around a timed window: wall time, CPU time (process.cpuUsage) and peak RSS.
 *
 * Peak RSS is the kernel's high-water mark VmHWM (Linux), reset at the start of the window through
 * /proc/self/clear_refs: exact, and it costs the measured process nothing. Where that is unavailable a
 * sampler on a worker thread reads RSS every 10 ms (it keeps sampling while the main thread is busy in a
 * synchronous or microtask-only loop); it is not started on Linux, as its own isolate would add ~8 MB
 * to the very figure it measures.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { Worker } from 'node:worker_threads';

const SAMPLER = `
const { workerData } = require('node:worker_threads');
const peak = new Float64Array(workerData.buf);
const ctl = new Int32Array(workerData.ctl);
const tick = () => {
  if (Atomics.load(ctl, 0) === 1) { const r = process.memoryUsage.rss(); if (r > peak[0]) peak[0] = r; }
  if (Atomics.load(ctl, 0) === 2) return;
  setTimeout(tick, ${10});
};
tick();
`;

export class RssSampler {
  private readonly buf = new SharedArrayBuffer(8);
  private readonly ctl = new SharedArrayBuffer(4);
  private readonly peak = new Float64Array(this.buf);
  private readonly state = new Int32Array(this.ctl);
  private worker: Worker | undefined;

  start(): void {
    this.peak[0] = process.memoryUsage.rss();
    resetHighWaterMark();
    if (hwmResettable) return;
    if (!this.worker) {
      this.worker = new Worker(SAMPLER, { eval: true, workerData: { buf: this.buf, ctl: this.ctl } });
      this.worker.unref();
    }
    Atomics.store(this.state, 0, 1);
  }

  /** Peak RSS in bytes since `start`. */
  stop(): number {
    Atomics.store(this.state, 0, 0);
    const sampled = Math.max(this.peak[0]!, process.memoryUsage.rss());
    const hwm = readHighWaterMark();
    return hwm !== undefined && hwm > 0 ? Math.max(sampled, hwm) : sampled;
  }

  async close(): Promise<void> {
    Atomics.store(this.state, 0, 2);
    await this.worker?.terminate();
    this.worker = undefined;
  }
}

let hwmResettable: boolean | undefined;

function resetHighWaterMark(): void {
  if (hwmResettable === false) return;
  try {
    writeFileSync('/proc/self/clear_refs', '5');
    hwmResettable = true;
  } catch {
    hwmResettable = false;
  }
}

function readHighWaterMark(): number | undefined {
  if (!hwmResettable) return undefined;
  try {
    const m = /VmHWM:\s+(\d+) kB/.exec(readFileSync('/proc/self/status', 'utf8'));
    return m ? Number(m[1]) * 1024 : undefined;
  } catch {
    return undefined;
  }
}

/** Heap used after a forced full GC (needs --expose-gc), in bytes; null without it. */
export function heapAfterGc(): number | null {
  const gc = (globalThis as { gc?: () => void }).gc;
  if (typeof gc !== 'function') return null;
  gc();
  gc();
  return process.memoryUsage().heapUsed;
}

export interface WindowFigures {
  durationMs: number;
  cpuUserMs: number;
  cpuSystemMs: number;
  peakRss: number;
}

/** Times one window. */
export async function measureWindow<T>(sampler: RssSampler, fn: () => Promise<T>): Promise<{ value: T; figures: WindowFigures }> {
  sampler.start();
  const cpu0 = process.cpuUsage();
  const t0 = performance.now();
  const value = await fn();
  const t1 = performance.now();
  const cpu = process.cpuUsage(cpu0);
  const peakRss = sampler.stop();
  return { value, figures: { durationMs: t1 - t0, cpuUserMs: cpu.user / 1000, cpuSystemMs: cpu.system / 1000, peakRss } };
}

/** Spins the CPU for `ms` milliseconds (the "~1 ms work" of seed 000 was a busy loop too). */
export function busyWork(ms: number): number {
  const end = performance.now() + ms;
  let x = 0;
  while (performance.now() < end) x++;
  return x;
}
