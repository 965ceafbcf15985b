/**
 * extreme-batching (seed 002): write batching against a no-op backend. Seed table: flush delay x
 * concurrent workers (100 ms x 1,000 ... 1 ms x 10,000), batch size 1,000, each worker awaiting every
 * write. Reports the average and the peak one-second throughput of each configuration (the best window of at
 * least 1 s between samples ~100 ms apart; a run shorter than 1 s: its whole span). On Redis every
 * published event is read back (after the window) through a new consumer group, as in the other
 * publish-only scenarios.
 */
import { benchBus } from '../lib/bus.js';
import { acceptedCount, publishMeasured, readBackCheck } from '../lib/drive.js';
import { sizedPayloads } from '../lib/payload.js';
import type { Scenario } from '../lib/types.js';
import { isRedis, variant } from './helpers.js';
import { GO_BATCHER_TABLE } from '../references.js';

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

/**
 * The peak throughput over a window of at least `windowMs` between `samples` ([ms, events so far], in time
 * order, the first at the window's start and the last at its end), in events/s, and that window's length.
 * A run shorter than `windowMs` has no such window: then its whole span, which is shorter (`windowMs` below
 * the asked one says so). 0 only when nothing was counted.
 */
export function peakWindow(samples: readonly (readonly [ms: number, events: number])[], windowMs = 1000): { perSecond: number; windowMs: number } {
  const first = samples[0];
  const last = samples[samples.length - 1];
  if (!first || !last || last[0] <= first[0]) return { perSecond: 0, windowMs: 0 };
  const rate = (a: readonly [number, number], b: readonly [number, number]) => ((b[1] - a[1]) / (b[0] - a[0])) * 1000;
  const r1 = (n: number) => Math.round(n * 10) / 10;
  if (last[0] - first[0] < windowMs) return { perSecond: Math.round(rate(first, last)), windowMs: r1(last[0] - first[0]) };
  let best = { perSecond: 0, windowMs: 0 };
  // For each start, the first sample at least windowMs later: the shortest window of at least windowMs.
  for (let i = 0, j = 0; i < samples.length; i++) {
    while (j < samples.length && samples[j]![0] - samples[i]![0] < windowMs) j++;
    if (j === samples.length) break;
    const r = rate(samples[i]!, samples[j]!);
    if (r > best.perSecond) best = { perSecond: r, windowMs: samples[j]![0] - samples[i]![0] };
  }
  return { perSecond: Math.round(best.perSecond), windowMs: r1(best.windowMs) };
}

const TABLE = GO_BATCHER_TABLE;

export const extremeBatching: Scenario = {
  name: 'extreme-batching',
  title: 'Write batching at the limit: flush delay x concurrent publishers into noop',
  seed: 'go-batcher',
  description: 'N concurrent publishers each awaiting every publish, batch 1,000, flush delay 100/50/10/1 ms, for --duration seconds (the Go write-batching layer ran 30 s).',
  transports: ['noop', 'memory', 'native', 'redis'],
  takes: ['duration', 'messageSize', 'batchSize', 'flushInterval', 'publishers', 'partitions'],
  defaults: { batchSize: 1000, messageSize: 128, duration: 3, iterations: 3, warmup: 1 },
  quick: { duration: 0.5, iterations: 1, warmup: 0 },
  variants(c, explicit) {
    const rows = TABLE.filter(([d, w]) => (!explicit.has('flushInterval') || d === c.flushInterval) && (!explicit.has('publishers') || w === c.publishers));
    const list = rows.length ? rows : [[c.flushInterval, c.publishers, 0, 0] as const];
    return list.map(([d, w, avg, peak]) =>
      variant(
        c,
        `delay${d}-workers${w}`,
        `flush ${d} ms, ${w.toLocaleString('en-US')} publishers`,
        'drive',
        { flushInterval: d, publishers: w },
        {},
        {
          seed: avg ? { source: 'go-batcher', throughput: avg, note: `peak ${peak.toLocaleString('en-US')}/s` } : undefined,
        },
      ),
    );
  },
  runners: {
    async drive({ config: c, timed, warmup }) {
      const pool = sizedPayloads(POOL, c.messageSize);
      const bus = await benchBus(c);
      let done = 0;
      // [ms, events so far] at the window's start, every ~100 ms, and at its end.
      const samples: [number, number][] = [];
      const perPublisher = new Array<number>(c.publishers).fill(0);
      let acc: { count: number; by: string };
      try {
        await timed(async () => {
          const start = performance.now();
          const end = start + c.duration * 1000;
          let windowStart = start;
          samples.push([start, 0]);
          // 100 ms samples, taken from the publish loop itself: a timer would never fire, because the
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
                    samples.push([now, done]);
                    windowStart = now;
                  }
                }
              }
              perPublisher[w] = (i - w) / c.publishers;
            }),
          );
          samples.push([performance.now(), done]);
        });
        acc = acceptedCount(bus);
      } finally {
        await bus.close();
      }
      const check = isRedis(c) && !warmup ? await readBackCheck(c, 'bench.sized', poolPublishCounts(perPublisher)) : { received: acc.count, by: acc.by };
      const peak = peakWindow(samples);
      const notes = peak.windowMs < 1000 ? [`run shorter than 1 s: peakOneSecond is the whole run's rate, over its ${peak.windowMs} ms (peakWindowMs)`] : undefined;
      return { ...publishMeasured(done, c.messageSize, check), extra: { peakOneSecond: peak.perSecond, peakWindowMs: peak.windowMs }, notes };
    },
  },
};
