/**
 * The latency runner shared by latency-burst, latency-sustained and end-to-end: consumers are
 * subscribed first; then events are sent either open-loop at `rate` (latency from each event's
 * intended send time, so coordinated omission is corrected) or as one closed-loop burst (latency from
 * each publish() call). Latency ends when our handler starts (after the bus validated the payload).
 */
import type { BatchingConfig } from '../../src/index.js';
import { benchBus } from './bus.js';
import { LatencyRecorder, paced } from './latency.js';
import { DeliveryTracker, sizedPayloads, tickPayloads, tradePayloads, waitForCounter, type TickPayload } from './payload.js';
import { IdProbe, OrderProbe, type StartProbe } from './start-probes.js';
import { currentThreadCpus, pinCurrentThread } from '../../transports/native/affinity.js';
import type { Measured, RunContext } from './types.js';

export interface LatencyOptions {
  payload: 'trade' | 'sized';
  /** Open loop at config.rate when true and rate > 0; otherwise one burst. */
  open: boolean;
  batching?: BatchingConfig;
  transport?: Record<string, unknown>;
  /**
   * Native: pin the publishing (main) thread to the first CPU this process may use and the consumer
   * threads to the others (`pinCurrentThread`, subscribe option `cpus`), restored afterwards.
   */
  pin?: boolean;
}

/**
 * Events sent before the measured ones, the same way (at the same rate, or as one burst), and not
 * recorded: every iteration runs in a fresh process, so without them the measured events would also
 * time the JIT compiling the publish and delivery paths (the first few thousand events of a cold process
 * are far slower than warm ones).
 */
const WARM_EVENTS = 10_000;

/**
 * Bursts are warmed with this many bursts: with one, the measured burst would be the second a process ever
 * sent, still compiling and growing its heap; p99 settles only after a few. A service that bursts has sent
 * bursts before.
 */
const WARM_BURSTS = 5;

/**
 * Warm-up events: at a rate, WARM_EVENTS; a warm-up burst is as large as the measured one. A smaller warm-up
 * burst leaves code the measured burst runs when its queue grows deeper unoptimized: V8 would compile it on
 * its helper threads during the measured burst, taking a CPU from the publisher or the consumer (TurboFan
 * phases in perf samples of the measured window).
 */
export function warmCount(n: number, openLoop: boolean): number {
  return openLoop ? Math.min(n, WARM_EVENTS) : n;
}

/**
 * Before each burst the publisher is idle this long, as before a real burst: consumer threads are asleep
 * when it starts, and are woken by it (back to back, the burst after a warm-up one would find them awake).
 */
export const QUIET_BEFORE_BURST_MS = 50; // the burst machine floor (floor-run.ts) passes it to latencyFloor as quietMs
const quiet = () => new Promise((r) => setTimeout(r, QUIET_BEFORE_BURST_MS));

/**
 * Pinned runs (`pin`): the CPUs this thread may use, the first for the publisher (sender) and the rest for the
 * consumers; throws unless the addon can tell and there are 2+. Undefined when not pinned.
 */
export function pinnedCpus(pin: boolean): number[] | undefined {
  if (!pin) return undefined;
  const cpus = currentThreadCpus();
  if (cpus === undefined || cpus.length < 2) throw new Error(`pinning needs the native addon and 2+ CPUs (this thread may run on: ${cpus?.join(',') ?? 'unknown'})`);
  return cpus;
}

export async function latencyRun(ctx: RunContext, o: LatencyOptions): Promise<Measured> {
  const c = ctx.config;
  if (c.transport === 'native' && o.payload === 'trade') return latencyRunInWorkers(ctx, o);
  const type = (o.payload === 'trade' ? 'bench.trade' : 'bench.sized') as 'bench.sized';
  const bus = await benchBus(c, { batching: o.batching, transport: o.transport });
  return mainThreadLatency(ctx, o, {
    async subscribe(deliver) {
      for (let k = 0; k < c.consumers; k++) {
        await bus.subscribe(type, { group: 'latency', consumer: `consumer-${k}`, concurrency: 1 }, (e) => deliver((e.data as { id: number }).id));
      }
    },
    sends: 'publish()',
    send: (payload) => bus.publish(type, payload as never),
    close: () => bus.close(),
  });
}

/** The publish and consume ends of a main-thread latency run: the library's bus, or a hand-written baseline. */
export interface LatencyPath {
  /** Starts `config.consumers` consumers; each calls `deliver` with the payload's id where its handler starts. */
  subscribe(deliver: (id: number) => void): Promise<void>;
  /** What `send` calls, for the notes: `publish()`, `XADD`. */
  sends: string;
  /** Sends one payload (`i`: its index, warm-up ones after the measured); a rejection counts as a failed publish. */
  send(payload: { id: number }, i: number): Promise<unknown>;
  /** Problems met outside `send` (e.g. failed acks), for the iteration's notes; read after the window. */
  notes?(): string[];
  /** Stops the consumers and disconnects; called once, after the run or when it fails. */
  close(): Promise<void>;
}

/**
 * Drives `path` the way latencyRun measures the bus on the main thread: consumers first, then the
 * warm-up events (unrecorded), then the measured ones in the timed window, paced by `paced` (open loop
 * at config.rate, or bursts); latency from each event's send time to `deliver`. Closes `path`.
 */
export async function mainThreadLatency(ctx: RunContext, o: Pick<LatencyOptions, 'payload' | 'open'>, path: LatencyPath): Promise<Measured> {
  const c = ctx.config;
  const n = c.messageCount;
  const openLoopMode = o.open && c.rate > 0;
  const warm = warmCount(n, openLoopMode);
  // Ids [0, n) are measured; [n, n + warm) are the warm-up events.
  const payloads: { id: number }[] = o.payload === 'trade' ? tradePayloads(n + warm) : sizedPayloads(n + warm, c.messageSize);
  const sendAt = new Float64Array(n + warm);
  const tracker = new DeliveryTracker(n);
  let warmed = new DeliveryTracker(warm);
  const rec = new LatencyRecorder();
  let failed = 0;
  const fail = () => {
    failed++;
  };
  const send = (from: number, count: number) =>
    paced(count, openLoopMode ? c.rate : 0, (i, at) => {
      sendAt[from + i] = at;
      path.send(payloads[from + i]!, from + i).catch(fail);
    });
  try {
    await path.subscribe((id) => {
      if (id >= n) {
        warmed.mark(id - n);
        return;
      }
      rec.recordMs(performance.now() - sendAt[id]!);
      tracker.mark(id);
    });
    if (c.transport === 'redis') await new Promise((r) => setTimeout(r, 200)); // let the first XREADGROUP block
    for (let round = 0; round < (openLoopMode ? 1 : WARM_BURSTS); round++) {
      if (!openLoopMode) await quiet();
      warmed = new DeliveryTracker(warm);
      await send(n, warm);
      await warmed.waitAll(10_000);
    }
    if (!openLoopMode) await quiet();
    await ctx.timed(async () => {
      await send(0, n);
      await tracker.waitAll(10_000);
    });
    const notes = failed ? [`${failed} ${path.sends} calls rejected`] : [];
    if (!warmed.complete) notes.push(`only ${warmed.unique} of ${warm} warm-up events arrived`);
    notes.push(...(path.notes?.() ?? []));
    return tracker.measured(n, { latency: rec.summary(openLoopMode ? 'open' : 'closed'), notes: notes.length > 0 ? notes : undefined, extra: { warmupEvents: warm } });
  } finally {
    await path.close();
  }
}

const hrNs = () => Number(process.hrtime.bigint());

/**
 * Native transport: publish on the main thread, handler start in worker threads (`consumers` workers
 * of one group). Each event carries its send time `t` (open loop: its intended send time; burst: the
 * publish() call) in ns on process.hrtime's monotonic clock, which every thread shares; the workers
 * read the clock first thing and store it in shared memory (see start-probes.ts). The histogram is built
 * on the main thread after the run.
 */
export async function latencyRunInWorkers(ctx: RunContext, o: LatencyOptions): Promise<Measured> {
  const c = ctx.config;
  const n = c.messageCount;
  const workers = c.consumers;
  const payloads = tickPayloads(n);
  const openLoopMode = o.open && c.rate > 0;
  const { warm, rounds } = workerWarmup(n, workers, openLoopMode);
  const epoch = hrNs();
  // One partition per worker: a no-op handler that stores its start time; otherwise one that reads ids.
  const probe: StartProbe = c.partitions === workers ? new OrderProbe(workers, rounds * warm.length + n, epoch) : new IdProbe(n + warm.length, epoch);
  const cpus = pinnedCpus(o.pin === true);
  const bus = await benchBus(c, { batching: o.batching, transport: o.transport });
  let failed = 0;
  const fail = () => {
    failed++;
  };
  const send = (list: TickPayload[]) => {
    // Send times are performance.now() ms; map them onto the hrtime clock once.
    const hr0 = hrNs() - epoch;
    const perf0 = performance.now();
    return paced(
      list.length,
      openLoopMode ? c.rate : 0,
      (i, at) => {
        const p = list[i]!;
        p.t = Math.round(hr0 + (at - perf0) * 1e6);
        bus.publish('bench.tick', p).catch(fail);
      },
      'spin',
    );
  };
  const wait = (target: number, idleMs: number) =>
    waitForCounter(
      () => probe.done(),
      () => probe.received(),
      target,
      idleMs,
    );
  try {
    if (cpus !== undefined) pinCurrentThread([cpus[0]!]);
    const pinned = cpus === undefined ? {} : { cpus: cpus.slice(1) };
    await bus.subscribe('bench.tick', { group: 'latency', workers, handler: probe.handler, workerData: probe.workerData, ...pinned }, undefined as never);
    for (let round = 0; round < rounds; round++) {
      if (!openLoopMode || round > 0) await quiet();
      probe.phase(round * warm.length);
      await send(warm);
      await wait(warm.length, 30_000);
    }
    probe.phase(rounds * warm.length);
    if (!openLoopMode) await quiet();
    await ctx.timed(async () => {
      await send(payloads);
      await wait(n, 10_000);
    });
    const got = probe.collect(payloads);
    if (failed) got.notes.push(`${failed} publish() calls rejected`);
    return workersMeasured(got, n, openLoopMode ? 'open' : 'closed', workersExtra(workers, payloads, warm.length, cpus));
  } finally {
    await bus.close();
    if (cpus !== undefined) pinCurrentThread(cpus);
  }
}

/**
 * The warm-up of a worker-thread run: the events of one round (ids after the measured ones) and how many
 * rounds are sent, so worker start-up and first JIT are not measured. A round is as on the main thread
 * (warmCount, sent the same way) and at least enough to start every worker. At least one round per worker,
 * so each of N workers sees about as many as the one worker of a 1-consumer run and its JIT is as warm;
 * bursts WARM_BURSTS. At a rate, at least two rounds with a quiet between them: the consumer threads' first
 * idle wait that times out (WORKER_WAIT_US) is then a warm-up's, not the one before the measured events.
 */
function workerWarmup(n: number, workers: number, openLoopMode: boolean): { warm: TickPayload[]; rounds: number } {
  const warm = tickPayloads(Math.max(64, workers * 16, warmCount(n, openLoopMode)), n);
  const rounds = openLoopMode ? Math.max(2, workers) : Math.max(workers, WARM_BURSTS);
  return { warm, rounds };
}

/** The `extra` figures of a worker-thread run: workers, payload size, warm-up events and, when pinned, the CPUs. */
function workersExtra(workers: number, payloads: readonly TickPayload[], warmupEvents: number, cpus: number[] | undefined): Record<string, number> {
  const pinned: Record<string, number> = cpus === undefined ? {} : { publisherCpu: cpus[0]!, consumerCpus: cpus.length - 1 };
  return { workers, payloadBytes: JSON.stringify(payloads[payloads.length - 1]).length, warmupEvents, ...pinned };
}

/** The Measured of a worker-thread run of `n` events, from what its probe collected. */
function workersMeasured(got: ReturnType<StartProbe['collect']>, n: number, mode: 'open' | 'closed', extra: Record<string, number>): Measured {
  return {
    events: got.unique,
    sent: n,
    received: got.received,
    unique: got.unique,
    ...(got.unmatched > 0 ? { unmatched: got.unmatched } : {}),
    latency: got.rec.summary(mode),
    extra,
    notes: got.notes.length > 0 ? got.notes : undefined,
    verifiedBy: got.verifiedBy,
  };
}
