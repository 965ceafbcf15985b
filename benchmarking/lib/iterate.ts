/**
 * Runs iterations of one variant in the current process: the warmups (discarded, but reported) and
 * then the measured ones, each timed by its runner through `ctx.timed`.
 */
import { firstLine } from './bus.js';
import { heapAfterGc, measureWindow, RssSampler, type WindowFigures } from './measure.js';
import { deletePrefix } from './redis.js';
import type { IterationResult, Measured, Scenario, Variant } from './types.js';

export interface IterationRequest {
  scenario: string;
  variant: Variant;
  warmups: number;
  measured: number;
  /** Leave each iteration's Redis keys in place (`--keep-keys`); by default they go once its runner returns. */
  keepKeys?: boolean;
}

export async function runIterationsHere(scenario: Scenario, req: IterationRequest): Promise<IterationResult[]> {
  const variant = req.variant;
  const runner = scenario.runners[variant.runner];
  if (!runner) throw new Error(`Scenario "${scenario.name}" has no runner "${variant.runner}".`);
  const sampler = new RssSampler();
  const out: IterationResult[] = [];
  try {
    const total = req.warmups + req.measured;
    for (let i = 0; i < total; i++) {
      let figures: WindowFigures | undefined;
      let heap: number | null = null;
      // Each iteration (warmups too) gets its own Redis keys, so read-backs never see an earlier iteration's events.
      const config = { ...variant.config, keyPrefix: `${variant.config.keyPrefix}${i}:` };
      const measured = await runner({
        variant: { ...variant, config },
        config,
        iteration: i,
        warmup: i < req.warmups,
        timed: async (fn) => {
          if (figures) throw new Error('ctx.timed called twice in one iteration');
          const r = await measureWindow(sampler, fn);
          figures = r.figures;
          heap = heapAfterGc();
          return r.value;
        },
      });
      // Outside the timed window. Without it a run's streams would add up in Redis until the run ended, and a
      // long run of large messages can exhaust the machine's memory (the kernel then kills redis-server).
      if (config.transport === 'redis' && !req.keepKeys) await deletePrefix(config.redisUrl, config.keyPrefix);
      if (!figures) throw new Error(`Runner "${variant.runner}" never called ctx.timed`);
      const f = figures as WindowFigures;
      const ms = measured.windowMs ?? f.durationMs;
      const secs = ms / 1000;
      out.push({
        ...measured,
        warmup: i < req.warmups,
        durationMs: round(ms, 3),
        throughput: Math.round(measured.events / secs),
        mbPerSec: measured.bytes !== undefined ? round(measured.bytes / 1e6 / secs, 2) : undefined,
        cpuUserMs: round(f.cpuUserMs, 1),
        cpuSystemMs: round(f.cpuSystemMs, 1),
        cpuPercent: round(((f.cpuUserMs + f.cpuSystemMs) / f.durationMs) * 100, 1),
        peakRssMb: round(f.peakRss / 1048576, 1),
        heapAfterGcMb: heap === null ? null : round(heap / 1048576, 1),
        ...deliveryCounts(measured),
        pid: process.pid,
      });
    }
  } finally {
    await sampler.close();
  }
  return out;
}

/**
 * Lost and duplicated events of an iteration. Deliveries not matched to a publish (`unmatched`) are neither:
 * of the `sent` events, `unique` arrived and at most `unmatched` more may have, so lost is at least
 * sent - unique - unmatched; and the unmatched deliveries can be at most sent - unique distinct events, so
 * duplicates are at least unique + unmatched - sent (plus any counted among the matched ones). Without
 * unmatched deliveries: sent - unique lost, received - unique duplicated.
 */
export function deliveryCounts(m: Pick<Measured, 'sent' | 'received' | 'unique' | 'unmatched'>): { lost: number | null; duplicated: number | null } {
  const unique = m.unique ?? m.received;
  if (unique === null) return { lost: null, duplicated: null };
  const unmatched = m.unmatched ?? 0;
  return {
    lost: Math.max(0, m.sent - unique - unmatched),
    duplicated: m.received === null ? null : m.received - unique - unmatched + Math.max(0, unique + unmatched - m.sent),
  };
}

export function round(n: number, digits: number): number {
  const f = 10 ** digits;
  return Math.round(n * f) / f;
}

export { firstLine };
