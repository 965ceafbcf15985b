/**
 * native-throughput (issue 5 target): publishMany of 40-byte trading payloads
 * {"id":N,"sym":"AAPL","px":150.25,"qty":100} delivered to one worker-thread consumer with a no-op
 * handler, end to end (first publish -> last delivery counted in the worker). The addon and the pure-JS
 * fallback (`implementation: 'js'`) are measured in the same run; the fallback is the baseline row.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { benchBus } from '../lib/bus.js';
import { tradePayloads, waitForCounter, type TradePayload } from '../lib/payload.js';
import type { Measured, RunContext, Scenario, SeedFigure } from '../lib/types.js';
import { variant } from './helpers.js';

/** Worker-thread no-op handler that counts deliveries in shared memory. */
const COUNT_HANDLER = fileURLToPath(new URL('../workers/count-handler.mjs', import.meta.url));

const TARGET: SeedFigure = { source: 'target-issue-5', throughput: 5_000_000, note: 'C++ stream processor: 320K/s produce; Go write-batching layer: 600K ops/s' };

async function throughputRun(ctx: RunContext): Promise<Measured> {
  const c = ctx.config;
  const n = c.messageCount;
  const arraySize = c.batchSize;
  const implementation = String(ctx.variant.params['implementation']);
  // Payloads and the publishMany arrays are built before the timed window.
  const payloads = tradePayloads(n);
  const chunks: TradePayload[][] = [];
  for (let i = 0; i < n; i += arraySize) chunks.push(payloads.slice(i, i + arraySize));
  // Warm-up: a tenth of the run (at least one array, at most 100,000 events). Each iteration's bus starts a
  // new worker thread, whose JIT starts cold: with one array of warm-up the measured window would also time it.
  const warmCount = Math.max(Math.min(arraySize, 4096), Math.min(100_000, Math.floor(n / 10)));
  const warm = tradePayloads(warmCount).map((p) => ({ ...p, id: n + p.id }));
  const shared = { received: new SharedArrayBuffer(4) };
  const received = new Int32Array(shared.received);
  const bus = await benchBus(c, { transport: { implementation } });
  const transport = bus.transport as unknown as {
    totals(type: string): { pushed: number; popped: number; droppedNewest: number; droppedOldest: number; rejected: number };
  };
  const count = () => Atomics.load(received, 0);
  const waitFor = (target: number, idleMs: number) => waitForCounter(count, count, target, idleMs);
  try {
    await bus.subscribe('bench.trade', { group: 'throughput', workers: 1, handler: COUNT_HANDLER, workerData: shared }, undefined as never);
    // Warm-up: worker start-up, module load and the JIT of both threads are not timed.
    for (let i = 0; i < warm.length; i += arraySize) await bus.publishMany('bench.trade', warm.slice(i, i + arraySize));
    await waitFor(warm.length, 30_000);
    Atomics.store(received, 0, 0);
    let publishMs = 0;
    await ctx.timed(async () => {
      const t0 = performance.now();
      for (const chunk of chunks) await bus.publishMany('bench.trade', chunk);
      publishMs = performance.now() - t0;
      await waitFor(n, 10_000);
    });
    // The wait above ends at the n-th delivery: a delivery beyond it (a duplicate) would land after it.
    // Outside the window, let the worker settle and count again, so duplicates are seen, not cut off.
    await sleep(50);
    const got = Atomics.load(received, 0);
    const t = transport.totals('bench.trade');
    const dropped = t.droppedNewest + t.droppedOldest + t.rejected;
    const notes: string[] = [];
    if (dropped) notes.push(`ring counters: ${dropped} dropped/rejected`);
    if (t.pushed !== n + warm.length) notes.push(`ring counters: pushed ${t.pushed}, expected ${n + warm.length}`);
    return {
      events: got,
      sent: n,
      received: got,
      unique: Math.min(got, t.popped - warm.length),
      bytes: n * JSON.stringify(payloads[n - 1]).length,
      extra: { publishMs: Math.round(publishMs * 10) / 10, arraySize, pushed: t.pushed - warm.length, popped: t.popped - warm.length, dropped },
      notes: notes.length ? notes : undefined,
      verifiedBy:
        'deliveries counted by the worker handler in shared memory, again 50 ms after the last expected one (a duplicate would raise the count past the events sent); ring counters (transport.totals): a drop or a pop short of the events sent counts as lost',
    };
  } finally {
    await bus.close();
  }
}

export const nativeThroughput: Scenario = {
  name: 'native-throughput',
  title: 'Native transport throughput: publishMany to one worker consumer',
  seed: 'target-issue-5',
  description: 'publishMany of 40-byte trading payloads (arrays of --batch-size, default 4,096) to 1 worker consumer, no-op handler; addon vs JS fallback.',
  transports: ['native'],
  takes: ['messageCount', 'batchSize', 'flushInterval', 'partitions'],
  defaults: { messageCount: 1_000_000, messageSize: 40, batchSize: 4096, flushInterval: 0, partitions: 1, iterations: 3, warmup: 1 },
  quick: { messageCount: 200_000, iterations: 2, warmup: 1 },
  variants(c) {
    const label = (impl: string) => `publishMany(${c.batchSize.toLocaleString('en-US')}) -> 1 worker, no-op handler (${impl})`;
    return [
      variant(c, 'addon', label('addon'), 'throughput', {}, { implementation: 'native' }, { baseline: 'js-fallback', seed: TARGET }),
      variant(c, 'js-fallback', label('JS fallback'), 'throughput', {}, { implementation: 'js' }, { kind: 'baseline', seed: TARGET }),
    ];
  },
  runners: { throughput: throughputRun },
};
