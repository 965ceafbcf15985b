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
  return c.transport === 'memory' ? { maxLen: Math.max(10_000, c.messageCount) } : {};
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
      for (let k = 0; k < c.consumers; k++) {
        await bus.subscribe('bench.sized', { group: 'consumers', consumer: `consumer-${k}`, startFrom: '0', concurrency: 1 }, (e) => {
          perConsumer[k]!++;
          tracker.mark(e.data.id);
        });
      }
      await tracker.waitAll(10_000);
    });
    return {
      events: tracker.unique,
      sent: payloads.length,
      received: tracker.received,
      unique: tracker.unique,
      bytes: tracker.unique * c.messageSize,
      extra: { minPerConsumer: Math.min(...perConsumer), maxPerConsumer: Math.max(...perConsumer) },
      verifiedBy: 'payload ids counted in the handler',
    };
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
    return {
      events: tracker.unique,
      sent: payloads.length,
      received: tracker.received,
      unique: tracker.unique,
      extra: { publishMs: Math.round(publishMs * 10) / 10, minPerConsumer: Math.min(...perConsumer), maxPerConsumer: Math.max(...perConsumer) },
      verifiedBy: 'payload ids counted in the handler',
    };
  } finally {
    await bus.close();
  }
}
