/**
 * The scenario registry: one file per scenario.
 */
import { UsageError } from '../lib/config.js';
import type { Scenario } from '../lib/types.js';
import { publishOverhead } from './publish-overhead.js';

export const SCENARIOS: Scenario[] = [publishOverhead];

/** What `npm run benchmark` with no flags runs (short settings, no Redis). */
export const DEFAULT_SUITE = ["publish-overhead"];

export function findScenario(name: string): Scenario {
  const s = SCENARIOS.find((x) => x.name === name);
  if (!s) throw new UsageError(`Unknown scenario "${name}". Available: ${SCENARIOS.map((x) => x.name).join(', ')}.`);
  return s;
}
