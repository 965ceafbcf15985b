/// <reference types="node" preserve="true" />
// The declarations use Node's types (Buffer, URL): this keeps them found where the consumer's tsconfig does not list them
// (`types: []`, TypeScript 6+'s default). preserve="true": TypeScript 5.5+ drops the directive from the .d.ts otherwise.
/**
 * eventlane: typed events with pluggable transports. This entry is what an application uses; a transport
 * author's kit is `eventlane/transport` (src/transport-kit.ts).
 */
import { registeredTransports as listTransports } from './registry.js';
import { registerBuiltinTransports } from './builtin-transports.js';

export { createEventBus, EventBus } from './bus.js';
export type {
  EventBusConfig,
  SubscribeOptions,
  CommonSubscribeOptions,
  SubscribeOptionsFor,
  Subscription,
  EventHandler,
  PublishManyOptions,
  DelayedPublishOptions,
  EventDeadLetter,
  ValidDeadLetter,
  InvalidDeadLetter,
  IdleOptions,
} from './bus-types.js';
export { defineEvents } from './events.js';
export { versioned, VERSION_HEADER, type VersionStep } from './versions.js';
export { defineHandler } from './handler-module.js';
export type { EventMap, EventSchemas, EventName, EventInput, EventData } from './events.js';
export type { EventEnvelope, EventHeaders, PublishOptions } from './envelope.js';
export type { GroupCounts, GroupCountsOptions } from './group-counts.js';
/** What a handler is told of the delivery beside the event (attempt, group, partition). */
export type { DeliveryContext } from './transport.js';
export { registerTransport } from './registry.js';
export type { TransportConfigs, TransportBlock, TransportSubscribeOptions } from './transport-configs.js';

/** The transport types `createEventBus` can build: the built-ins and every registered one. */
export function registeredTransports(): string[] {
  registerBuiltinTransports();
  return listTransports();
}

export type { BatchingConfig } from './config.js';
/** The `memory` transport's block (the other transports' are exported by `eventlane/redis-streams` and `eventlane/native`). */
export type { MemoryTransportConfig } from './builtin-transports.js';
export type { Logger } from './logger.js';
export {
  EventlaneError,
  ValidationError,
  ConfigError,
  UnknownEventError,
  SerializationError,
  PayloadTooLargeError,
  ClosedError,
  BackpressureError,
  TimeoutError,
  TransportError,
  ConnectionError,
  ReplicationError,
  PublishPartialError,
  DecodeError,
  UnknownTransportError,
  NativeError,
  NonRetryableError,
  isRetryable,
  type EventlaneErrorCode,
  type EventlaneErrorOptions,
  type ValidationIssue,
} from './errors.js';
export type { PublishMessage, ProcessMessage, OutcomeMessage, ReclaimMessage, ConnectionMessage, BatchMessage, PublishErrorMessage, Within } from './diagnostics.js';
export type { BusHealth, HealthError, HealthOptions, SubscriptionHealth, SubscriptionProgress, SubscriptionState, TransportHealth } from './health.js';
