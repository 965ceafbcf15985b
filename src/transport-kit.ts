/// <reference types="node" preserve="true" />
// The contract's declarations use Node's types (Buffer): found where the consumer's tsconfig lists none.
/**
 * `eventlane/transport`: what a transport author needs, apart from what an application uses (`eventlane`).
 * The contract a transport implements (src/transport.ts), how to register it, the delivery rules every
 * transport applies (src/delivery-rules.ts), the payload encoders and
 * decoders the bus compiles per schema, versioned batch codecs a transport may store events with, and the
 * typed errors a transport throws. `docs/writing-a-transport.md` builds a transport from these.
 */
export type {
  Transport,
  TransportFactory,
  TransportContext,
  TransportCapabilities,
  TransportSubscription,
  PublishUnit,
  PublishInput,
  UnitForm,
  EventRun,
  RunBytes,
  OutgoingEvent,
  WriteResult,
  WriteSettlement,
  SubscriptionSpec,
  DeliveryHandler,
  DeliveryContext,
  DeadLetter,
  BackoffOptions,
} from './transport.js';
export type { GroupCounts, GroupTarget } from './group-counts.js';
export type { TransportScheduling } from './scheduling.js';
export { registerTransport } from './registry.js';
export { afterFailure, isLastAttempt, pastLastAttempt, deadLetterOf, outlivedDrain, type DeliveryRules, type FailureVerdict } from './delivery-rules.js';
export { DeliveryEngine, Running, type EngineSpec, type RetryVerdict } from './delivery-engine.js';
export { combineProgress, type SubscriptionProgress, type SubscriptionState, type TransportHealth } from './health.js';
export { handlerEvent, type HandlerEvent } from './handler-module.js';
export { consumeCheck, type ConsumeCheck } from './consume-check.js';
export { NEEDS_STRING, NO_ROOM, type JsonWriter } from './json-writer.js';
export { jsonReader, type JsonReader, type ReaderPlan } from './json-reader.js';
export { jsonCodec, binaryCodec, detectCodec, type EnvelopeCodec } from './codec.js';
export * from './errors.js';
export type { EventEnvelope, EventHeaders } from './envelope.js';
export type { Logger } from './logger.js';
