/**
 * The scenario registry: one file per scenario.
 */
import { UsageError } from '../lib/config.js';
import type { Scenario } from '../lib/types.js';
import { brokerThroughput } from './broker-throughput.js';
import { consumerGroups } from './consumer-groups.js';
import { delayedDelivery } from './delayed-delivery.js';
import { endToEnd } from './end-to-end.js';
import { extremeBatching } from './extreme-batching.js';
import { latencyBurst } from './latency-burst.js';
import { latencySustained } from './latency-sustained.js';
import { messageSize } from './message-size.js';
import { nativeThroughput } from './native-throughput.js';
import { observabilityOverhead } from './observability-overhead.js';
import { partitionScaling } from './partition-scaling.js';
import { publishOverhead } from './publish-overhead.js';
import { publishingThroughput } from './publishing-throughput.js';

export const SCENARIOS: Scenario[] = [
  publishOverhead,
  publishingThroughput,
  extremeBatching,
  partitionScaling,
  nativeThroughput,
  latencyBurst,
  latencySustained,
  brokerThroughput,
  messageSize,
  consumerGroups,
  endToEnd,
  observabilityOverhead,
  delayedDelivery,
];

/** What `npm run benchmark` with no flags runs (short settings, in-process, no Redis). */
export const DEFAULT_SUITE = ['publish-overhead', 'extreme-batching', 'partition-scaling', 'latency-burst', 'latency-sustained', 'broker-throughput', 'consumer-groups', 'message-size'];

export function findScenario(name: string): Scenario {
  const s = SCENARIOS.find((x) => x.name === name);
  if (!s) throw new UsageError(`Unknown scenario "${name}". Available: ${SCENARIOS.map((x) => x.name).join(', ')}.`);
  return s;
}
