/// <reference types="node" preserve="true" />
// The declarations use Node's types (Buffer, URL): this keeps them found where the consumer's tsconfig does not list them
// (`types: []`, TypeScript 6+'s default). preserve="true": TypeScript 5.5+ drops the directive from the .d.ts otherwise.
/**
 * eventlane: typed events with pluggable transports.
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
  EventDeadLetter,
  ValidDeadLetter,
  InvalidDeadLetter,
  IdleOptions,
} from './bus-types.js';
export { defineEvents } from './events.js';
export type { EventMap, EventSchemas, EventName, EventInput, EventData } from './events.js';
export type { EventEnvelope, EventHeaders, PublishOptions } from './envelope.js';
export { registerTransport } from './registry.js';
export type { TransportConfigs, TransportBlock, TransportSubscribeOptions } from './transport-configs.js';

/** The transport types `createEventBus` can build: the built-ins and every registered one. */
export function registeredTransports(): string[] {
  registerBuiltinTransports();
  return listTransports();
}

export type {
  Transport,
  TransportFactory,
  TransportContext,
  TransportCapabilities,
  TransportSubscription,
  PublishUnit,
  EventRun,
  RunBytes,
  OutgoingEvent,
  WriteResult,
  SubscriptionSpec,
  DeliveryHandler,
  DeliveryContext,
  DeadLetter,
  BackoffOptions,
} from './transport.js';
/** For a transport with `capabilities.partialUnits`: mark a unit's error with how many of its first events were written. */
export { withWritten, writtenCount } from './transport.js';
export { NEEDS_STRING, NO_ROOM, type JsonWriter } from './json-writer.js';
export { jsonReader, type JsonReader, type ReaderPlan } from './json-reader.js';
export type { BatchingConfig } from './config.js';
/** The `memory` transport's block (the other transports' are exported by `eventlane/redis-streams` and `eventlane/native`). */
export type { MemoryTransportConfig } from '../transports/memory/index.js';
export { jsonCodec, binaryCodec, detectCodec, type EnvelopeCodec } from './codec.js';
export type { Logger } from './logger.js';
export * from './errors.js';
