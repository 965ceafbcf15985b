/**
 * The latency runner shared by latency-burst, latency-sustained and end-to-end: consumers are
 * subscribed first; then events are sent either open-loop at `rate` (latency from each event's
 * intended send time, so coordinated omission is corrected) or as one closed-loop burst (latency from
 * each publish() call). Latency ends when our handler starts (after the bus validated the payload).
 */
import type { BatchingConfig } from '../../src/index.js';
import { benchBus } from './bus.js';
import { LatencyRecorder, openLoop } from './latency.js';
import { DeliveryTracker, sizedPayloads, tradePayloads } from './payload.js';
import type { Measured, RunContext } from './types.js';

export interface LatencyOptions {
  payload: 'trade' | 'sized';
  /** Open loop at config.rate when true and rate > 0; otherwise one burst. */
  open: boolean;
  batching?: BatchingConfig;
  transport?: Record<string, unknown>;
}

export async function latencyRun(ctx: RunContext, o: LatencyOptions): Promise<Measured> {
  const c = ctx.config;
  const n = c.messageCount;
  const type = o.payload === 'trade' ? 'bench.trade' : 'bench.sized';
  const payloads: { id: number }[] = o.payload === 'trade' ? tradePayloads(n) : sizedPayloads(n, c.messageSize);
  const sendAt = new Float64Array(n);
  const tracker = new DeliveryTracker(n);
  const rec = new LatencyRecorder();
  const bus = await benchBus(c, { batching: o.batching, transport: o.transport });
  let failed = 0;
  const fail = () => {
    failed++;
  };
  try {
    for (let k = 0; k < c.consumers; k++) {
      await bus.subscribe(type, { group: 'latency', consumer: `consumer-${k}`, concurrency: 1 }, (e) => {
        const id = (e.data as { id: number }).id;
        rec.recordMs(performance.now() - sendAt[id]!);
        tracker.mark(id);
      });
    }
    if (c.transport === 'redis') await new Promise((r) => setTimeout(r, 200)); // let the first XREADGROUP block
    const openLoopMode = o.open && c.rate > 0;
    await ctx.timed(async () => {
      if (openLoopMode) {
        await openLoop(n, c.rate, (i, intended) => {
          sendAt[i] = intended;
          bus.publish(type as 'bench.sized', payloads[i] as never).catch(fail);
        });
      } else {
        for (let i = 0; i < n; i++) {
          sendAt[i] = performance.now();
          bus.publish(type as 'bench.sized', payloads[i] as never).catch(fail);
        }
      }
      await tracker.waitAll(10_000);
    });
    const notes = failed ? [`${failed} publish() calls rejected`] : undefined;
    return {
      events: tracker.unique,
      sent: n,
      received: tracker.received,
      unique: tracker.unique,
      latency: rec.summary(openLoopMode ? 'open' : 'closed'),
      notes,
      verifiedBy: 'payload ids counted in the handler',
    };
  } finally {
    await bus.close();
  }
}
