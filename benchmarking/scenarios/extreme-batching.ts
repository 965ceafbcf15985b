/**
 * extreme-batching (seed 002): write batching against a no-op backend. Seed table: flush delay x
 * concurrent workers (100 ms x 1,000 ... 1 ms x 10,000), batch size 1,000, each worker awaiting every
 * write. Reports the average and the peak one-second throughput of each configuration. On Redis every
 * published event is read back (after the window) through a new consumer group, as in the other
 * publish-only scenarios.
 */
import { benchBus } from '../lib/bus.js';
import { acceptedCount, publishMeasured, readBackCheck } from '../lib/drive.js';
import { sizedPayloads } from '../lib/payload.js';
import type { Scenario } from '../lib/types.js';
import { isRedis, variant } from './helpers.js';

/** Payloads published over and over (the run is bound by time, not by a count made beforehand). */
const POOL = 65_536;

/**
 * How many times each pool payload was published: publisher `w` of `perPublisher.length` publishes
 * pool[(w + j * publishers) % pool] for j = 0 .. perPublisher[w] - 1.
 */
export function poolPublishCounts(perPublisher: readonly number[], pool = POOL): Uint32Array {
  const times = new Uint32Array(pool);
  const publishers = perPublisher.length;
  perPublisher.forEach((n, w) => {
    for (let j = 0, i = w; j < n; j++, i += publishers) times[i % pool]!++;
  });
  return times;
}

const TABLE: [delayMs: number, workers: number, avg: number, peak: number][] = [
  [100, 1000, 486_000, 522_000],
  [100, 2000, 533_000, 569_000],
  [50, 4000, 558_000, 592_000],
  [10, 6000, 575_000, 611_000],
  [1, 10000, 564_000, 600_000],
];

export const extremeBatching: Scenario = {
  name: 'extreme-batching',
  title: 'Write batching at the limit: flush delay x concurrent publishers into noop',
  seed: '002',
  description: 'N concurrent publishers each awaiting every publish, batch 1,000, flush delay 100/50/10/1 ms, for --duration seconds (seed: 30 s).',
  transports: ['noop', 'memory', 'native', 'redis'],
  takes: ['duration', 'messageSize', 'batchSize', 'flushInterval', 'publishers', 'partitions'],
  defaults: { batchSize: 1000, messageSize: 128, duration: 3, iterations: 3, warmup: 1 },
  quick: { duration: 0.5, iterations: 1, warmup: 0 },
  variants(c, explicit) {
    const rows = TABLE.filter(
      ([d, w]) => (!explicit.has('flushInterval') || d === c.flushInterval) && (!explicit.has('publishers') || w === c.publishers),
    );
    const list = rows.length ? rows : [[c.flushInterval, c.publishers, 0, 0] as const];
    return list.map(([d, w, avg, peak]) =>
      variant(c, `delay${d}-workers${w}`, `flush ${d} ms, ${w.toLocaleString('en-US')} publishers`, 'drive', { flushInterval: d, publishers: w }, {}, {
        seed: avg ? { source: 'seed 002', throughput: avg, note: `peak ${peak.toLocaleString('en-US')}/s` } : undefined,
      }),
    );
  },
  runners: {
    async drive({ config: c, timed, warmup }) {
      const pool = sizedPayloads(POOL, c.messageSize);
      const bus = await benchBus(c);
      let done = 0;
      const windows: number[] = [];
      const perPublisher = new Array<number>(c.publishers).fill(0);
      let acc: { count: number; by: string };
      let peak = 0;
      try {
        await timed(async () => {
          const end = performance.now() + c.duration * 1000;
          let last = 0;
          let windowStart = performance.now();
          // 100 ms windows, sampled from the publish loop itself: a timer would never fire, because the
          // publishers' awaits on noop writes form one unbroken microtask chain.
          await Promise.all(
            Array.from({ length: c.publishers }, async (_, w) => {
              let i = w;
              while (performance.now() < end) {
                await bus.publish('bench.sized', pool[i & (POOL - 1)]!);
                done++;
                i += c.publishers;
                if ((done & 1023) === 0) {
                  const now = performance.now();
                  if (now - windowStart >= 100) {
                    windows.push(done - last);
                    last = done;
                    windowStart = now;
                  }
                }
              }
              perPublisher[w] = (i - w) / c.publishers;
            }),
          );
        });
        for (let i = 0; i + 10 <= windows.length; i++) peak = Math.max(peak, windows.slice(i, i + 10).reduce((a, b) => a + b, 0));
        acc = acceptedCount(bus);
      } finally {
        await bus.close();
      }
      const check = isRedis(c) && !warmup ? await readBackCheck(c, 'bench.sized', poolPublishCounts(perPublisher)) : { received: acc.count, by: acc.by };
      return { ...publishMeasured(done, c.messageSize, check), extra: { peakOneSecond: peak } };
    },
  },
};
