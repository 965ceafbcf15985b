/**
 * Latency recording with HdrHistogram (nanosecond values, 3 significant digits) and an open-loop
 * constant-rate pacer. Open-loop latencies are measured from each event's intended send time, so a
 * stalled sender cannot hide queueing delay (coordinated omission).
 */
import * as hdr from 'hdr-histogram-js';
import type { LatencySummary } from './types.js';

const CURVE = [0, 50, 75, 90, 95, 99, 99.5, 99.9, 99.95, 99.99, 100];

/** A histogram of nanosecond latencies: 1 ns .. 120 s, 3 significant digits. */
function newHistogram(): hdr.Histogram {
  return hdr.build({ lowestDiscernibleValue: 1, highestTrackableValue: 120e9, numberOfSignificantValueDigits: 3 });
}

/**
 * The summary of a histogram of nanosecond latencies (without the histogram itself). `maxNs`: the exact
 * largest value recorded, where `h` is decoded (an encoded histogram keeps buckets, not the exact maximum).
 */
function summarizeHistogram(h: hdr.Histogram, loop: 'open' | 'closed', maxNs = h.maxValue): LatencySummary {
  const us = (ns: number) => Math.round(ns / 10) / 100;
  // A percentile is the highest value of its histogram bucket, which can lie above the largest value
  // recorded (p99.9 of 1..100 us would read above 100 us): capped at the exact maximum.
  const at = (p: number) => (p === 100 ? maxNs : Math.min(h.getValueAtPercentile(p), maxNs));
  return {
    count: h.totalCount,
    minUs: us(h.totalCount > 0 ? at(0) : 0),
    meanUs: us(h.mean),
    p50Us: us(at(50)),
    p90Us: us(at(90)),
    p99Us: us(at(99)),
    p999Us: us(at(99.9)),
    maxUs: us(maxNs),
    curve: CURVE.map((p) => [p, us(at(p))] as [number, number]),
    loop,
  };
}

export class LatencyRecorder {
  readonly histogram = newHistogram();

  /** Records a latency given in milliseconds (performance.now() deltas). */
  recordMs(ms: number): void {
    this.histogram.recordValue(Math.max(0, Math.round(ms * 1e6)));
  }

  /** Records a latency given in nanoseconds. */
  recordNs(ns: number): void {
    this.histogram.recordValue(Math.max(0, Math.round(ns)));
  }

  /**
   * The iteration's summary, with its histogram encoded (`histogram`: hdr-histogram-js
   * encodeIntoCompressedBase64), so that the parent process can merge the iterations' histograms.
   */
  summary(loop: 'open' | 'closed'): LatencySummary {
    return { ...summarizeHistogram(this.histogram, loop), histogram: hdr.encodeIntoCompressedBase64(this.histogram) };
  }
}

/**
 * The summary of several iterations' latencies, as percentiles of all their events together: the
 * iterations' encoded histograms (`histogram`) decoded and added into one. The maximum is the largest of
 * the iterations' exact maxima (percentiles capped at it, as in each iteration), the minimum the smallest
 * of their minima.
 */
export function mergeHistograms(list: readonly (LatencySummary & { histogram: string })[]): LatencySummary {
  const merged = newHistogram();
  for (const l of list) merged.add(hdr.decodeFromCompressedBase64(l.histogram));
  const counted = list.filter((l) => l.count > 0);
  const maxNs = counted.length ? Math.max(...counted.map((l) => l.maxUs * 1000)) : 0;
  const summary = summarizeHistogram(merged, list[0]?.loop ?? 'closed', maxNs);
  if (counted.length) summary.minUs = Math.min(...counted.map((l) => l.minUs));
  summary.curve[0] = [summary.curve[0]![0], summary.minUs];
  return { ...summary, merge: 'histogram' };
}

/**
 * Calls `send(i, atMs)` for i in [0, count): open loop at `rate` per second when `rate > 0` (`atMs` is
 * the intended send time), else as one synchronous burst (`atMs` is performance.now() at the call).
 */
export async function paced(count: number, rate: number, send: (i: number, atMs: number) => void, how: 'loop' | 'spin' = 'loop'): Promise<void> {
  if (rate > 0) {
    await openLoop(count, rate, send, how === 'spin');
    return;
  }
  for (let i = 0; i < count; i++) send(i, performance.now());
}

/**
 * Calls `send(i, intendedMs)` for i in [0, count) at `rate` per second, each as soon as its intended
 * time has come; setTimeout when the next send is more than 2 ms away (timers are too coarse for 100 us
 * spacing). Resolves after the last send. Nearer than that:
 * - `spin` false: the event loop turns (setImmediate) until it is time, for threads whose event loop has
 *   work while they send (handlers on the main thread, Redis replies);
 * - `spin` true: the event loop turns once after each send (the publish's microtasks and any timers run),
 *   then the thread waits in a plain loop, for threads with nothing else to do (native worker runs). The
 *   turns of the other mode each allocate, and the scavenges they cause would pause the sender and make
 *   events late on their own.
 * Time is read with process.hrtime.bigint(), which optimized code reads without allocating, where
 * performance.now() allocates a heap number per call.
 */
export function openLoop(count: number, rate: number, send: (i: number, intendedMs: number) => void, spin = false): Promise<number> {
  const interval = 1000 / rate;
  const t0 = performance.now();
  const h0 = process.hrtime.bigint();
  let i = 0;
  let due = h0; // of event i
  let turned = false; // spin: the event loop turned since the last send
  return new Promise((resolve) => {
    const step = () => {
      while (i < count) {
        const now = process.hrtime.bigint();
        if (due > now) {
          const wait = Number(due - now) / 1e6;
          if (wait > 2) return void setTimeout(step, wait - 1);
          if (!spin || !turned) {
            turned = true;
            return void setImmediate(step);
          }
          while (process.hrtime.bigint() < due);
        }
        turned = false;
        send(i, t0 + i * interval);
        i++;
        due = h0 + BigInt(Math.round(i * interval * 1e6));
      }
      resolve(t0);
    };
    step();
  });
}
