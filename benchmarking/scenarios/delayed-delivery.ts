/**
 * delayed-delivery (issue 45 item 2): events published at a steady `--rate` (default 10,000/s, open loop), each
 * with `deliverAt` one second after its intended send time; lateness = handler start minus due time (HdrHistogram;
 * an early delivery counts in `extra.early`). After the timed window, the throughput of scheduling
 * (`extra.schedulePerSec`: `--message-count` single delayed publishes at once, due an hour later). On Redis it
 * is compared, in the same run, with a hand-written sorted set and mover (baselines/redis-delayed.ts).
 */
import { redisDelayed } from '../baselines/redis-delayed.js';
import { benchBus } from '../lib/bus.js';
import { LatencyRecorder, openLoop } from '../lib/latency.js';
import { DeliveryTracker, tradePayloads } from '../lib/payload.js';
import type { Measured, RunContext, Scenario } from '../lib/types.js';
import { isRedis, variant } from './helpers.js';

/** How long after its intended send time each event is due. */
export const DELAY_MS = 1000;
/** How far ahead the events of the scheduling-throughput phase are due (never within the run). */
export const FAR_MS = 3_600_000;

/** Wall-clock milliseconds with sub-millisecond resolution (due times are epoch ms). */
export const wallMs = (): number => performance.timeOrigin + performance.now();

async function delayedRun(ctx: RunContext): Promise<Measured> {
  const n = ctx.config.messageCount;
  const bus = await benchBus(ctx.config);
  try {
    const due = new Float64Array(n);
    const latency = new LatencyRecorder();
    const tracker = new DeliveryTracker(n);
    let early = 0;
    await bus.subscribe('bench.trade', { group: 'g', concurrency: 64 }, (e) => {
      const late = wallMs() - due[e.data.id]!;
      if (late < 0) early++;
      latency.recordMs(late);
      tracker.mark(e.data.id);
    });
    const payloads = tradePayloads(n);
    const failed: unknown[] = [];
    await ctx.timed(async () => {
      await openLoop(n, ctx.config.rate, (i, intended) => {
        const at = performance.timeOrigin + intended + DELAY_MS;
        due[i] = at;
        bus.publish('bench.trade', payloads[i]!, { deliverAt: at }).catch((err: unknown) => failed.push(err));
      });
      await tracker.waitAll(DELAY_MS + 10_000);
    });
    const schedulePerSec = await scheduleThroughput(n, (p, at) => bus.publish('bench.trade', p, { deliverAt: at }), payloads);
    return tracker.measured(n, { latency: latency.summary('open'), extra: { early, schedulePerSec, failed: failed.length } });
  } finally {
    await bus.close();
  }
}

/** `n` delayed publishes at once, due `FAR_MS` ahead; events scheduled per second until all resolved. */
export async function scheduleThroughput<P>(n: number, schedule: (p: P, at: number) => Promise<unknown>, payloads: readonly P[]): Promise<number> {
  const at = Date.now() + FAR_MS;
  const t0 = performance.now();
  const calls: Promise<unknown>[] = new Array(n);
  for (let i = 0; i < n; i++) calls[i] = schedule(payloads[i]!, at);
  await Promise.all(calls);
  return Math.round(n / ((performance.now() - t0) / 1000));
}

export const delayedDelivery: Scenario = {
  name: 'delayed-delivery',
  title: (c) => `Delayed delivery: lateness at ${c.rate.toLocaleString('en-US')} delayed events/s, and scheduling throughput`,
  seed: 'issue 45 (due-time bound: within 100 ms on an idle system)',
  description: `publish(..., { deliverAt: intended + ${DELAY_MS} ms }) open loop at --rate; lateness = handler start - due time; then --message-count delayed publishes at once (scheduling throughput, extra.schedulePerSec). On Redis vs a hand-written ZADD + Lua mover + XADD -> XREADGROUP.`,
  transports: ['redis', 'memory', 'native'],
  takes: ['messageCount', 'rate', 'partitions'],
  defaults: { messageCount: 20_000, rate: 10_000, partitions: 1, iterations: 2, warmup: 1 },
  quick: { messageCount: 10_000, iterations: 1, warmup: 0 },
  variants(c) {
    const rate = `${c.rate.toLocaleString('en-US')}/s`;
    const base = isRedis(c) && c.partitions === 1 ? 'ioredis-zset-mover' : undefined;
    const ours = variant(
      c,
      'delayed',
      `deliverAt +${DELAY_MS} ms at ${rate}, ${c.partitions} partition(s)`,
      'delayed',
      {},
      {},
      { baseline: base, seed: { source: 'issue 45 bound', latencyUs: { max: 100_000 } } },
    );
    if (base === undefined) return [ours];
    return [ours, variant(c, base, `ioredis: ZADD per event + Lua mover (ZRANGEBYSCORE, XADD, ZREM) -> XREADGROUP + XACK, ${rate}`, 'baseline', {}, {}, { kind: 'baseline' })];
  },
  runners: { delayed: delayedRun, baseline: redisDelayed },
};
