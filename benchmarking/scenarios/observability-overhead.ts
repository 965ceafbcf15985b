/**
 * observability-overhead (issue 44): what instrumentation costs, in one run: publish() into `noop` and a
 * memory round trip (publishMany, every event handled), each with nothing subscribed, the Prometheus collector,
 * and the OpenTelemetry SDK with spans sampled out and recorded. Ratios are to nothing subscribed.
 */
import { publishAndWork } from '../lib/consume-run.js';
import { timedPublish } from '../lib/drive.js';
import { OBSERVER_LABELS, OBSERVERS, type ObserverKind } from '../lib/observer-kinds.js';
import type { Measured, RunContext, Scenario, Variant } from '../lib/types.js';
import { variant } from './helpers.js';

/** Runs `run` under the variant's observer; the instrumentations are loaded here only, not by every scenario's process. */
async function observed(ctx: RunContext, run: () => Promise<Measured>): Promise<Measured> {
  const { observe } = await import('../lib/observers.js');
  const stop = await observe(ctx.variant.params['observer'] as ObserverKind);
  try {
    return await run();
  } finally {
    await stop();
  }
}

export const observabilityOverhead: Scenario = {
  name: 'observability-overhead',
  title: 'Observability overhead: publish into noop and a memory round trip, observed and not',
  seed: 'target-issue-44',
  description:
    'publish() x1000 awaited per group into noop, and publishMany(1000) through the memory transport to a handler, each with nothing subscribed to the diagnostics channels, the Prometheus collector, the OpenTelemetry SDK with spans sampled out, and spans recorded to an exporter that drops them. 128 B.',
  transports: ['noop', 'memory'],
  takes: ['messageCount', 'messageSize', 'batchSize', 'flushInterval'],
  defaults: { messageCount: 200_000, messageSize: 128, batchSize: 4000, flushInterval: 0, iterations: 3, warmup: 1 },
  quick: { messageCount: 100_000, iterations: 2, warmup: 1 },
  variants(c) {
    const out: Variant[] = [];
    for (const [path, transport, runner] of [
      ['publish', 'noop', 'publish'],
      ['round-trip', 'memory', 'round-trip'],
    ] as const) {
      for (const observer of OBSERVERS) {
        const id = `${path}-${observer}`;
        const label = `${path === 'publish' ? 'publish() into noop' : 'memory round trip'}, ${OBSERVER_LABELS[observer]}`;
        const baseline = observer === 'none' ? {} : { baseline: `${path}-none` };
        out.push(variant(c, id, label, runner, { transport, consumers: 1 }, { observer }, baseline));
      }
    }
    return out;
  },
  runners: {
    publish: (ctx) => observed(ctx, () => timedPublish(ctx, 'publish-groups', 1000, 1)),
    'round-trip': (ctx) => observed(ctx, () => publishAndWork(ctx, 0)),
  },
};
