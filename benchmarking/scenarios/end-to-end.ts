/**
 * end-to-end (issue 3 target): publish call -> handler start through Redis at a steady 10,000
 * events/s (open loop, from the intended send time), one consumer, 128 B payloads.
 */
import { latencyRun } from '../lib/latency-run.js';
import type { Scenario } from '../lib/types.js';
import { variant } from './helpers.js';

export const endToEnd: Scenario = {
  name: 'end-to-end',
  title: 'End-to-end latency through the transport at a steady rate',
  seed: 'issue 3 (target p50 <= 250 us, p99 <= 1 ms)',
  description: 'publish() -> handler start at --rate events/s (default 10,000), open loop, 1 consumer, 128 B.',
  transports: ['redis', 'native', 'memory'],
  defaults: { messageCount: 50_000, messageSize: 128, rate: 10_000, batchSize: 4000, flushInterval: 0, consumers: 1, iterations: 3, warmup: 1 },
  quick: { messageCount: 10_000, iterations: 1, warmup: 0 },
  variants(c) {
    return [
      variant(c, 'steady', `${c.consumers} consumer, ${c.rate.toLocaleString('en-US')}/s`, 'e2e', {}, {}, {
        seed: { source: 'issue 3 target', latencyUs: { p50: 250, p99: 1000 } },
      }),
    ];
  },
  runners: {
    e2e: (ctx) => latencyRun(ctx, { payload: 'sized', open: true }),
  },
};
