/**
 * The delivery contract, stated once as tests every transport that can be subscribed to passes: at-least-once
 * delivery, per-key order within a partition, fan-out to groups, work sharing inside a group, retry with
 * backoff, dead letters, where a group starts, close() draining in-flight handlers, idle(), validation
 * errors that send nothing, partition counts agreed through the transport, delayed delivery, and versioned event
 * types (the version carried with the event, older versions upcast, unknown versions dead-lettered).
 * `describeConformance` declares them with the caller's test runner.
 */
import { createEventBus } from '../index.js';
import { deliveryCases } from './cases-delivery.js';
import { delayedCases } from './cases-delayed.js';
import { failureCases } from './cases-failure.js';
import { lifecycleCases, partitionOwnersCase } from './cases-lifecycle.js';
import { partitionCases } from './cases-partitions.js';
import { versionCases } from './cases-versions.js';
import { conformanceEvents, type ConformanceBus, type Order } from './events.js';
import type { ConformanceCase, ConformanceKit, ConformanceTarget, TargetBlock } from './kit.js';
import type { ConformanceTestApi } from './test-api.js';

/** Retries 20 ms apart at first: the tests of retries and dead letters take well under a second. */
const FAST_RETRY = { retry: { backoff: { initialMs: 20, maxMs: 100 } } };
const HOOK_TIMEOUT_MS = 60_000;

/** The tests run on `target`, in order. */
export function conformanceCases(target: ConformanceTarget): ConformanceCase[] {
  const cases = [...deliveryCases, ...failureCases, ...lifecycleCases, ...partitionCases, ...delayedCases, ...versionCases];
  if (target.partitionOwners) cases.push(partitionOwnersCase(target.partitionOwners.retain));
  return cases;
}

/**
 * Declares the suite on `target` as a describe block of `api` (vitest: `import * as vitest from 'vitest'`).
 * Every bus a test makes is closed after it; the target's `setup` runs before the first test, `teardown`
 * after the last.
 */
export function describeConformance(api: ConformanceTestApi, target: ConformanceTarget): void {
  api.describe(`conformance: ${target.name}`, () => {
    const open: { close(): Promise<void> }[] = [];
    const kit = makeKit(api, target, open);
    api.beforeAll(async () => {
      await target.setup?.();
    }, HOOK_TIMEOUT_MS);
    api.afterEach(async () => {
      await Promise.allSettled(open.splice(0).map((b) => b.close()));
    }, HOOK_TIMEOUT_MS);
    api.afterAll(async () => {
      await target.teardown?.();
    }, HOOK_TIMEOUT_MS);
    for (const c of conformanceCases(target)) api.it(c.name, () => c.run(kit), target.testTimeoutMs ?? 30_000);
  });
}

function makeKit(api: ConformanceTestApi, target: ConformanceTarget, open: { close(): Promise<void> }[]): ConformanceKit {
  const track = <B extends { close(): Promise<void> }>(b: B): B => {
    open.push(b);
    return b;
  };
  return {
    target,
    expect: api.expect,
    timeout: target.timeoutMs ?? 10_000,
    track,
    async bus(transport?: TargetBlock, extra: Record<string, unknown> = {}): Promise<ConformanceBus> {
      const block = transport ?? (await target.transport());
      return track(await createEventBus({ service: 'conformance', events: conformanceEvents, transport: block as { type: string }, logger: false, ...extra }));
    },
    subscribe: (b, type, options, handler) => (target.subscribeVia ? target.subscribeVia(b, type, options, handler) : b.subscribe(type, options as never, handler)),
    subOpts: (o) => ({ ...target.subscribeOptions, ...FAST_RETRY, ...o }),
    orders: (n: number, from = 0): Order[] => Array.from({ length: n }, (_, i) => ({ orderId: `o-${from + i}`, amount: from + i, seq: from + i })),
  };
}
