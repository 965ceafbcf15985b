/**
 * Native latency runs match handler starts to publishes by partition order (OrderProbe); a worker whose
 * order or count check fails is not measured. Counted as received but not as distinct deliveries, its starts
 * would make the verdict say "dup N" (received - unique) for events that were never duplicated (a swapped
 * pair in one partition: 200 "duplicates" of 400 events, and as many "lost"). So they are counted apart
 * (`unmatched`): neither delivered nor duplicated, and the delivery is not verified (the run exits 1).
 */
import { describe, expect, it } from 'vitest';
import { GLOBAL_DEFAULTS } from '../../benchmarking/lib/config.js';
import { deliveryCounts, runIterationsHere } from '../../benchmarking/lib/iterate.js';
import { summarize } from '../../benchmarking/lib/stats.js';
import type { Measured, Scenario, Variant } from '../../benchmarking/lib/types.js';
import { deliveryCell, warnings } from '../../benchmarking/report/rows.js';

/** A scenario whose one runner returns `m` (after an empty timed window). */
function returning(m: Measured): { scenario: Scenario; variant: Variant } {
  const config = { ...GLOBAL_DEFAULTS, transport: 'noop' as const };
  const scenario: Scenario = {
    name: 'unmatched',
    title: 'unmatched',
    seed: 'none',
    description: '',
    transports: ['noop'],
    takes: [],
    defaults: {},
    variants: () => [],
    runners: {
      fixed: async ({ timed }) => {
        await timed(async () => {});
        return m;
      },
    },
  };
  return { scenario, variant: { id: 'v', label: 'v', kind: 'eventlane', runner: 'fixed', config, params: {} } };
}

describe('deliveries not matched to a publish', () => {
  it('a swapped pair in one of two partitions: 200 unmatched, nothing lost or duplicated, not ok', async () => {
    // What latencyRunInWorkers returns for the probe test's swapped pair: 400 starts, 200 matched.
    const { scenario, variant } = returning({ events: 200, sent: 400, received: 400, unique: 200, unmatched: 200 });
    const [it0] = await runIterationsHere(scenario, { scenario: 'unmatched', variant, warmups: 0, measured: 1 });
    expect(it0).toMatchObject({ sent: 400, received: 400, unique: 200, unmatched: 200, lost: 0, duplicated: 0 });
    const v = summarize(variant, [it0!]);
    expect(v.delivery).toMatchObject({ sent: 400, received: 400, lost: 0, duplicated: 0, unmatched: 200, ok: false });
    expect(deliveryCell(v)).toBe('400/400 unmatched 200');
    const run = { scenario: 's', title: 't', seed: '0', transport: 'native' as const, config: variant.config, variants: [v], startedAt: '', wallMs: 1 };
    expect(warnings([run])).toEqual(["s / v: 200 deliveries not matched to a publish (see the iterations' notes): delivery not verified"]);
  });

  it('the counts still prove what they can: fewer starts than sends are lost, more are duplicates', () => {
    // worker 1 got one event short, its partition unmatched: 1 lost
    expect(deliveryCounts({ sent: 100, received: 99, unique: 50, unmatched: 49 })).toEqual({ lost: 1, duplicated: 0 });
    // worker 0 got one event twice, its partition unmatched: 1 duplicate
    expect(deliveryCounts({ sent: 100, received: 101, unique: 50, unmatched: 51 })).toEqual({ lost: 0, duplicated: 1 });
    // one short and one extra in two unmatched partitions: nothing provable, all unmatched
    expect(deliveryCounts({ sent: 100, received: 100, unique: 0, unmatched: 100 })).toEqual({ lost: 0, duplicated: 0 });
    // nothing unmatched: as before
    expect(deliveryCounts({ sent: 100, received: 103, unique: 98 })).toEqual({ lost: 2, duplicated: 5 });
    expect(deliveryCounts({ sent: 100, received: null })).toEqual({ lost: null, duplicated: null });
  });
});
