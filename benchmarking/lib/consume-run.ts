/**
 * Consumption runners: prefill then consume (broker-throughput, consumer-groups), and
 * subscribe-then-publish with per-event work (partition-scaling).
 */
import { benchBus, type BenchBus } from './bus.js';
import { busyWork } from './measure.js';
import { DeliveryTracker, sizedPayloads } from './payload.js';
import type { BenchConfig, Measured, RunContext } from './types.js';

/** Transport options that keep every prefilled event for a group created later with startFrom '0'. */
export function retainAll(c: BenchConfig): Record<string, unknown> {
  // memory and native keep `maxLen` events per partition (default 10,000) for groups created later with startFrom '0'.
  if (c.transport === 'memory' || c.transport === 'native') return { maxLen: Math.max(10_000, c.messageCount) };
  return {};
}

async function prefill(bus: BenchBus, payloads: { id: number; body: string }[]): Promise<void> {
  for (let i = 0; i < payloads.length; i += 1000) await bus.publishMany('bench.sized', payloads.slice(i, i + 1000));
  await bus.flush();
}

/** Prefills `messageCount` events (untimed), then times `consumers` group members reading them all from '0'. */
export async function prefillThenConsume(ctx: RunContext, transport: Record<string, unknown> = {}): Promise<Measured> {
  const c = ctx.config;
  const payloads = sizedPayloads(c.messageCount, c.messageSize);
  const bus = await benchBus(c, { transport: { ...retainAll(c), ...transport } });
  const tracker = new DeliveryTracker(payloads.length);
  const perConsumer = new Array<number>(c.consumers).fill(0);
  try {
    await prefill(bus, payloads);
    await ctx.timed(async () => {
      // Members join together (as a group's instances start together): joined one after another, the first
      // one could drain a small prefill alone before the next arrived.
      await Promise.all(
        Array.from({ length: c.consumers }, (_, k) =>
          bus.subscribe('bench.sized', { group: 'consumers', consumer: `consumer-${k}`, startFrom: '0', concurrency: 1 }, (e) => {
            perConsumer[k]!++;
            tracker.mark(e.data.id);
          }),
        ),
      );
      await tracker.waitAll(10_000);
    });
    return tracker.measured(payloads.length, {
      bytes: tracker.unique * c.messageSize,
      extra: { minPerConsumer: Math.min(...perConsumer), maxPerConsumer: Math.max(...perConsumer) },
    });
  } finally {
    await bus.close();
  }
}

/**
 * Consumers subscribe first; the timed window publishes every event and waits until every handler ran
 * `workMs` of CPU busy loop. One consumer per partition.
 */
export async function publishAndWork(ctx: RunContext, workMs: number, subscribeExtra: Record<string, unknown> = {}): Promise<Measured> {
  const c = ctx.config;
  const payloads = sizedPayloads(c.messageCount, c.messageSize);
  const bus = await benchBus(c);
  const tracker = new DeliveryTracker(payloads.length);
  const perConsumer = new Array<number>(c.consumers).fill(0);
  try {
    for (let k = 0; k < c.consumers; k++) {
      await bus.subscribe('bench.sized', { group: 'workers', consumer: `consumer-${k}`, concurrency: 1, ...subscribeExtra }, (e) => {
        busyWork(workMs);
        perConsumer[k]!++;
        tracker.mark(e.data.id);
      });
    }
    let publishMs = 0;
    await ctx.timed(async () => {
      const t0 = performance.now();
      for (let i = 0; i < payloads.length; i += 1000) await bus.publishMany('bench.sized', payloads.slice(i, i + 1000));
      publishMs = performance.now() - t0;
      await tracker.waitAll(30_000);
    });
    return tracker.measured(payloads.length, {
      extra: { publishMs: Math.round(publishMs * 10) / 10, minPerConsumer: Math.min(...perConsumer), maxPerConsumer: Math.max(...perConsumer) },
    });
  } finally {
    await bus.close();
  }
}

/**
 * publishAndWork with handlers on worker threads (native transport: `workers` + a handler module).
 * Deliveries are counted by the workers in shared memory. `transport`: options of the transport block
 * (e.g. `implementation`).
 */
export async function publishAndWorkInWorkers(ctx: RunContext, workMs: number, workers: number, handlerPath: string, transport: Record<string, unknown> = {}): Promise<Measured> {
  const c = ctx.config;
  const payloads = sizedPayloads(c.messageCount, c.messageSize);
  const bus = await benchBus(c, { transport });
  // Warm-up events (ids after the measured ones) reach every partition before the window, so worker
  // start-up (thread, module load) is not timed; the counters are reset after them.
  const warm = sizedPayloads(payloads.length + workers * 4, c.messageSize).slice(payloads.length);
  const shared = { received: new SharedArrayBuffer(4), unique: new SharedArrayBuffer(4), seen: new SharedArrayBuffer(4 * (payloads.length + warm.length)), workMs };
  const received = new Int32Array(shared.received);
  const unique = new Int32Array(shared.unique);
  try {
    await bus.subscribe('bench.sized', { group: 'workers', workers, handler: handlerPath, workerData: shared }, undefined as never);
    await bus.publishMany('bench.sized', warm);
    const until = performance.now() + 30_000;
    // On `unique`, which a handler counts last: waiting on `received` could reset the counters between the
    // two counts of the last warm-up event, which would then show as one measured event too many (dup -1).
    while (Atomics.load(unique, 0) < warm.length && performance.now() < until) await new Promise((res) => setTimeout(res, 2));
    Atomics.store(received, 0, 0);
    Atomics.store(unique, 0, 0);
    let publishMs = 0;
    await ctx.timed(async () => {
      const t0 = performance.now();
      for (let i = 0; i < payloads.length; i += 1000) await bus.publishMany('bench.sized', payloads.slice(i, i + 1000));
      publishMs = performance.now() - t0;
      let last = -1;
      let idle = performance.now();
      while (Atomics.load(unique, 0) < payloads.length) {
        const r = Atomics.load(received, 0);
        if (r !== last) {
          last = r;
          idle = performance.now();
        } else if (performance.now() - idle > 30_000) break;
        await new Promise((res) => setTimeout(res, 1));
      }
    });
    return {
      events: Atomics.load(unique, 0),
      sent: payloads.length,
      received: Atomics.load(received, 0),
      unique: Atomics.load(unique, 0),
      extra: { publishMs: Math.round(publishMs * 10) / 10, workers },
      verifiedBy: 'payload ids counted by the worker handlers in shared memory',
    };
  } finally {
    await bus.close();
  }
}
