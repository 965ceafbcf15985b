/// <reference types="node" preserve="true" />
// The declarations use Node's types: found where the consumer's tsconfig lists none.
/**
 * `eventlane/otel`: OpenTelemetry traces and metrics for eventlane, following the messaging semantic
 * conventions (docs/observability.md, "OpenTelemetry"). Needs `@opentelemetry/api` (an optional peer
 * dependency); `eventlane` itself never loads it.
 *
 *     import { registerInstrumentations } from '@opentelemetry/instrumentation';
 *     import { EventlaneInstrumentation } from 'eventlane/otel';
 *     registerInstrumentations({ instrumentations: [new EventlaneInstrumentation()] });
 */
export { EventlaneInstrumentation, instrumentEventlane } from './instrumentation.js';
export type { EventlaneInstrumentationConfig, PublishHookInfo, ProcessHookInfo } from './config.js';
