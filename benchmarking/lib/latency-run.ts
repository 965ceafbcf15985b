/**
 * The latency runner shared by latency-burst, latency-sustained and end-to-end: consumers are
 * subscribed first; then events are sent either open-loop at `rate` (latency from each event's
 * intended send time, so coordinated omission is corrected) or as one closed-loop burst (latency from
 * each publish() call). Latency ends when our handler starts (after the bus validated the payload).
 */
import { fileURLToPath } from 'node:url';
import type { BatchingConfig } from '../../src/index.js';
import { benchBus } from './bus.js';
import { LatencyRecorder, paced } from './latency.js';
import { DeliveryTracker, sizedPayloads, tickPayloads, tradePayloads, waitForCounter, type TickPayload } from './payload.js';
import type { Measured, RunContext } from './types.js';

export interface LatencyOptions {
  payload: 'trade' | 'sized';
  /** Open loop at config.rate when true and rate > 0; otherwise one burst. */
  open: boolean;
  batching?: BatchingConfig;
  transport?: Record<string, unknown>;
}

/**
 * Events sent before the measured ones, the same way (at the same rate, or as one burst), and not
 * recorded: every iteration runs in a fresh process, so without them the measured events would also
 * time the JIT compiling the publish and delivery paths (the first ~5,000 events through Redis took
 * 1-11 ms each in a cold process, against ~0.2 ms once warm).
 */
const WARM_EVENTS = 10_000;

export async function latencyRun(ctx: RunContext, o: LatencyOptions): Promise<Measured> {
  const c = ctx.config;
  if (c.transport === 'native' && o.payload === 'trade') return latencyRunInWorkers(ctx, o);
  const n = c.messageCount;
  const warm = Math.min(n, WARM_EVENTS);
  const type = o.payload === 'trade' ? 'bench.trade' : 'bench.sized';
  // Ids [0, n) are measured; [n, n + warm) are the warm-up events.
  const payloads: { id: number }[] = o.payload === 'trade' ? tradePayloads(n + warm) : sizedPayloads(n + warm, c.messageSize);
  const sendAt = new Float64Array(n + warm);
  const tracker = new DeliveryTracker(n);
  const warmed = new DeliveryTracker(warm);
  const rec = new LatencyRecorder();
  const bus = await benchBus(c, { batching: o.batching, transport: o.transport });
  let failed = 0;
  const fail = () => {
    failed++;
  };
  const openLoopMode = o.open && c.rate > 0;
  const send = (from: number, count: number) =>
    paced(count, openLoopMode ? c.rate : 0, (i, at) => {
      sendAt[from + i] = at;
      bus.publish(type as 'bench.sized', payloads[from + i] as never).catch(fail);
    });
  try {
    for (let k = 0; k < c.consumers; k++) {
      await bus.subscribe(type, { group: 'latency', consumer: `consumer-${k}`, concurrency: 1 }, (e) => {
        const id = (e.data as { id: number }).id;
        if (id >= n) {
          warmed.mark(id - n);
          return;
        }
        rec.recordMs(performance.now() - sendAt[id]!);
        tracker.mark(id);
      });
    }
    if (c.transport === 'redis') await new Promise((r) => setTimeout(r, 200)); // let the first XREADGROUP block
    await send(n, warm);
    await warmed.waitAll(10_000);
    await ctx.timed(async () => {
      await send(0, n);
      await tracker.waitAll(10_000);
    });
    const notes = failed ? [`${failed} publish() calls rejected`] : [];
    if (!warmed.complete) notes.push(`only ${warmed.unique} of ${warm} warm-up events arrived`);
    return tracker.measured(n, { latency: rec.summary(openLoopMode ? 'open' : 'closed'), notes: notes.length > 0 ? notes : undefined, extra: { warmupEvents: warm } });
  } finally {
    await bus.close();
  }
}

/** Worker-thread handler module that records handler-start latency into shared memory. */
const LATENCY_HANDLER = fileURLToPath(new URL('../workers/latency-handler.mjs', import.meta.url));

const hrNs = () => Number(process.hrtime.bigint());

/**
 * Native transport: publish on the main thread, handler start in worker threads (`consumers` workers
 * of one group). Each event carries its send time `t` (open loop: its intended send time; burst: the
 * publish() call) in ns on process.hrtime's monotonic clock, which every thread shares; the worker
 * reads the clock first thing and writes the delta into a shared Float64Array slot per event id. The
 * histogram is built on the main thread after the run.
 */
export async function latencyRunInWorkers(ctx: RunContext, o: LatencyOptions): Promise<Measured> {
  const c = ctx.config;
  const n = c.messageCount;
  const workers = c.consumers;
  const payloads = tickPayloads(n);
  // Warm-up events (ids after the measured ones), so worker start-up and first JIT are not measured.
  // Warm-up events as on the main thread (WARM_EVENTS, sent the same way, in `workers` rounds), and at
  // least enough to start every worker.
  const warm = tickPayloads(Math.max(64, workers * 16, Math.min(n, WARM_EVENTS)), n);
  const total = n + warm.length;
  const epoch = hrNs();
  const shared = {
    latNs: new SharedArrayBuffer(8 * total),
    received: new SharedArrayBuffer(4),
    unique: new SharedArrayBuffer(4),
    seen: new SharedArrayBuffer(4 * total),
    epoch,
  };
  const latNs = new Float64Array(shared.latNs);
  const received = new Int32Array(shared.received);
  const unique = new Int32Array(shared.unique);
  const seen = new Int32Array(shared.seen);
  const bus = await benchBus(c, { batching: o.batching, transport: o.transport });
  let failed = 0;
  const fail = () => {
    failed++;
  };
  const waitUnique = (target: number, idleMs: number) =>
    waitForCounter(
      () => Atomics.load(unique, 0),
      () => Atomics.load(received, 0),
      target,
      idleMs,
    );
  const openLoopMode = o.open && c.rate > 0;
  const send = (list: TickPayload[]) => {
    // Send times are performance.now() ms; map them onto the hrtime clock once.
    const hr0 = hrNs() - epoch;
    const perf0 = performance.now();
    return paced(list.length, openLoopMode ? c.rate : 0, (i, at) => {
      const p = list[i]!;
      p.t = Math.round(hr0 + (at - perf0) * 1e6);
      bus.publish('bench.tick', p).catch(fail);
    }, 'spin');
  };
  try {
    await bus.subscribe('bench.tick', { group: 'latency', workers, handler: LATENCY_HANDLER, workerData: shared }, undefined as never);
    // One round per worker: each of N workers sees about as many warm-up events as the one worker of a
    // 1-consumer run, so its JIT is as warm (4P/4C latency-burst, CLI runs: p99 41-47 -> 14-18 ms).
    for (let round = 0; round < workers; round++) {
      Atomics.store(unique, 0, 0);
      Atomics.store(received, 0, 0);
      seen.fill(0);
      await send(warm);
      await waitUnique(warm.length, 30_000);
    }
    Atomics.store(received, 0, 0);
    Atomics.store(unique, 0, 0);
    await ctx.timed(async () => {
      await send(payloads);
      await waitUnique(n, 10_000);
    });
    const rec = new LatencyRecorder();
    for (let i = 0; i < n; i++) if (seen[i] === 1) rec.recordNs(latNs[i]!);
    const notes = failed ? [`${failed} publish() calls rejected`] : undefined;
    const bytes = JSON.stringify(payloads[n - 1]).length;
    return {
      events: Atomics.load(unique, 0),
      sent: n,
      received: Atomics.load(received, 0),
      unique: Atomics.load(unique, 0),
      latency: rec.summary(openLoopMode ? 'open' : 'closed'),
      extra: { workers, payloadBytes: bytes, warmupEvents: warm.length },
      notes,
      verifiedBy: 'payload ids counted by the worker handlers in shared memory',
    };
  } finally {
    await bus.close();
  }
}
