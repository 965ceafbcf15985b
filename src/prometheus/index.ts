/// <reference types="node" preserve="true" />
// The declarations use Node's types: this keeps them found where the consumer's tsconfig does not list them.
/**
 * `eventlane/prometheus`: eventlane's metrics for prom-client (an optional peer dependency: only this entry
 * point loads it). See docs/observability.md, "Prometheus".
 */
export { eventlaneMetrics, type EventlaneMetrics } from './collector.js';
export type { EventlaneMetricsOptions, MeteredBus } from './options.js';
export { METRIC_NAMES } from './metrics.js';
export type { GroupCounts } from '../group-counts.js';
