/**
 * The machine-floor runner of latency-sustained and latency-burst on native: the partition core driven by C++
 * threads only (`latencyFloor`, benchmarking/native/latency-floor.h), no JavaScript on the path. This process's main
 * thread sends into one partition per consumer:
 * - `open`: at the run's rate, open loop (each event due at t0 + i / rate on CLOCK_MONOTONIC);
 * - `burst`: the run's events back to back after the consumers idled for QUIET_BEFORE_BURST_MS (the JS rows'
 *   quiet before a burst), each timed from just before its push.
 * A C++ thread per partition pops with the transport's bounded spin-then-futex wait (`spinUs`) and takes each
 * event's latency first thing. What the JS rows of the same layout add to this is ours; this row is what the
 * machine (scheduler, wake-ups, hypervisor) costs.
 */
import { floorLoadError, latencyFloor, type LatencyFloorResult } from './floor-binding.js';
import { LatencyRecorder } from './latency.js';
import { pinnedCpus, QUIET_BEFORE_BURST_MS, warmCount } from './latency-run.js';
import type { Measured, RunContext } from './types.js';

/** Bytes of one record in the ring: the event's index and intended send time. */
const RECORD_BYTES = 16;

let skipTold = false;

/**
 * Whether the machine-floor rows can run in this process: the benchmark addon loads. When it does not, the
 * scenarios leave those rows out (the others run, linked to no floor) and the first call says why on stderr,
 * once per process.
 */
export function floorRowsAvailable(): boolean {
  const why = floorLoadError();
  if (why === undefined) return true;
  if (!skipTold) process.stderr.write(`benchmark: machine-floor rows skipped: the benchmark addon did not load (${why})\n`);
  skipTold = true;
  return false;
}

/**
 * One iteration: as many warm-up events as the JS rows send (open loop: 10,000, or all of `--message-count` if
 * fewer; a burst: one burst of `--message-count`), untimed, by a call of their own (no JIT to warm here: it runs the threads and ring memory once), then the
 * measured events in the timed window. Each call blocks this thread for count / rate seconds; nothing else
 * runs in this child meanwhile. `spinUs`: how long the consumer threads spin on an empty ring, as the row it
 * stands beside.
 */
export async function latencyFloorRun(ctx: RunContext, spinUs: number, mode: 'open' | 'burst' = 'open'): Promise<Measured> {
  const c = ctx.config;
  const n = c.messageCount;
  const burst = mode === 'burst';
  if (!burst && c.rate <= 0) throw new Error('the machine-floor row sends open loop: it needs --rate > 0');
  const spin = spinUs;
  // Pinned (the `pin` param, as the JS row it stands beside): the sender on the first CPU this thread may use, consumers on the others.
  const cpus = pinnedCpus(ctx.variant.params['pin'] === true);
  const run = (count: number) => latencyFloor({ rate: burst ? 0 : c.rate, count, consumers: c.consumers, spinUs: spin, cpus, quietMs: burst ? QUIET_BEFORE_BURST_MS : 0 });
  const warm = warmCount(n, !burst);
  run(warm);
  let r: LatencyFloorResult | undefined;
  await ctx.timed(async () => {
    r = run(n);
  });
  const rec = new LatencyRecorder();
  for (const ns of r!.latencyNs) rec.recordNs(ns);
  return {
    events: r!.unique,
    sent: n,
    received: r!.received,
    unique: r!.unique,
    latency: rec.summary(burst ? 'closed' : 'open'),
    extra: {
      consumerThreads: c.consumers,
      warmupEvents: warm,
      recordBytes: RECORD_BYTES,
      spinUs: spin,
      ...(burst ? { quietBeforeBurstMs: QUIET_BEFORE_BURST_MS } : {}),
      ...(cpus === undefined ? {} : { publisherCpu: cpus[0]!, consumerCpus: cpus.length - 1 }),
    },
    verifiedBy: 'each event index marked by the C++ consumer thread of its partition (received counts duplicates); latencyFloor fails unless every event arrived within 10 s of the last send',
    // A burst's call idles 50 ms first: its throughput is over the burst (first send to last arrival).
    ...(burst ? { windowMs: r!.windowNs / 1e6 } : {}),
  };
}
