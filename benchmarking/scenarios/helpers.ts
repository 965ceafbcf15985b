/**
 * Small helpers for declaring scenario variants.
 */
import type { BenchConfig, SeedFigure, Variant } from '../lib/types.js';

export function variant(
  base: BenchConfig,
  id: string,
  label: string,
  runner: string,
  overrides: Partial<BenchConfig> = {},
  params: Variant['params'] = {},
  extra: { kind?: Variant['kind']; baseline?: string; seed?: SeedFigure } = {},
): Variant {
  return { id, label, runner, kind: extra.kind ?? 'eventlane', config: { ...base, ...overrides }, params, baseline: extra.baseline, seed: extra.seed };
}

export const isRedis = (c: BenchConfig) => c.transport === 'redis';
