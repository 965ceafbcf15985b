/**
 * The bus's public option and result types: its configuration, subscribe options, handlers, subscriptions
 * and dead letters as `bus.deadLetters` returns them. The bus itself is in bus.ts.
 */
import type { HealthOptions, SubscriptionHealth } from './health.js';
import type { EventEnvelope, PublishOptions } from './envelope.js';
import type { ValidationIssue } from './errors.js';
import type { EventData, EventMap, EventName } from './events.js';
import type { Logger } from './logger.js';
import type { BatchingConfig } from './config.js';
import type { DeadLetter, DeliveryContext } from './transport.js';
import type { TransportBlock, TransportSubscribeOptions } from './transport-configs.js';

/** Bus configuration; `T` is the transport's type (see `TransportBlock`). */
export interface EventBusConfig<M extends EventMap, T extends string = string> {
  /** Name of this service: each event's `source`, and part of default consumer names. */
  service: string;
  /** The event map from `defineEvents`. */
  events: M;
  /**
   * Which transport and its options. Swapping transports is a change here only. A built-in transport's
   * options are typed (`TransportConfigs`).
   * @example { type: 'redis-streams', url: 'redis://127.0.0.1:6379', partitions: 4 }
   */
  transport: TransportBlock<T>;
  /** Publish batching; adaptive by default. */
  batching?: BatchingConfig | undefined;
  /**
   * A pino logger (or compatible), or `false` for no log at all. By default warnings and errors (handler
   * failures on their last attempt, dead letters, lost connections) go to stderr through pino at level `warn`.
   */
  logger?: Logger | false | undefined;
  /** How long `close()` (of the bus or of one subscription) waits for in-flight handlers. @default 30000 */
  drainTimeoutMs?: number | undefined;
  /** Validate payloads on the consumer side too (events from other producers). @default true */
  validateOnConsume?: boolean | undefined;
}

/** Subscription options every transport takes; each transport accepts more (`TransportSubscribeOptions`). */
export interface CommonSubscribeOptions {
  /** Consumer group: every group gets every event; members of one group share the work. */
  group: string;
  /**
   * Stable consumer name within the group. @default `${service}@${hostname}:${pid}` (`/t${threadId}` added in a
   * worker thread; `#2`, `#3`... for further subscriptions of the same type and group in this process)
   */
  consumer?: string | undefined;
  /** Handlers running at once. @default 1 */
  concurrency?: number | undefined;
  /** Where a new group starts: `'$'` new events only, `'0'` all retained events. @default '$' */
  startFrom?: '$' | '0' | undefined;
  /** Attempts before an event is dead-lettered. @default 5 */
  maxDeliveries?: number | undefined;
  /**
   * Delay before each retry: `initialMs` before the first, doubling each time up to `maxMs`, spread by up to 20%
   * either way. @default { initialMs: 100, maxMs: 30000 (or initialMs when that is longer) }
   */
  retry?: { backoff?: { initialMs?: number | undefined; maxMs?: number | undefined } | undefined } | undefined;
}

/**
 * Subscription options of a bus whose transport type is not known at compile time: the common ones and any
 * transport option, checked at run time by the transport (a `ConfigError` names a misspelt one).
 */
export interface SubscribeOptions extends CommonSubscribeOptions {
  [transportOption: string]: unknown;
}

/**
 * `subscribe`'s options on a bus of transport type `T`: the common options and that transport's own
 * (`TransportSubscribeOptions[T]`), so a misspelt option is a compile error; `SubscribeOptions` when `T` is
 * not a declared type (`string`, or a registered transport that declared no options).
 */
export type SubscribeOptionsFor<T extends string = string> = T extends keyof TransportSubscribeOptions ? CommonSubscribeOptions & TransportSubscribeOptions[T] : SubscribeOptions;

/**
 * A typed handler: return (or resolve) to ack, throw (or reject) to retry (or `NonRetryableError` to
 * dead-letter at once). What it returns or resolves to is ignored, so `(e) => list.push(e)` and a handler
 * returning another call's promise need no wrapping.
 */
export type EventHandler<M extends EventMap, K extends EventName<M>> = (event: EventEnvelope<EventData<M, K>, K>, ctx: DeliveryContext) => unknown;

/**
 * A dead letter of `bus.deadLetters(type)`, its payload checked against the event's schema when read
 * (dead letters can hold what never passed it: an event dead-lettered for a `ValidationError` on consume,
 * one another producer wrote with a looser schema, an entry that could not be decoded). Narrow on `valid`:
 * - `true`: `event.data` is the declared payload, the schema's output, as a handler gets it. (A schema that
 *   transforms values published its output, which it cannot check again: as for handlers, that is trusted.)
 * - `false`: `event` is what was read (`undefined` when it could not be decoded, `raw` then holds it), its
 *   `data` is `unknown`; `issues` says why it does not pass (zod's issues, paths within `data`).
 * @example
 * for (const letter of await bus.deadLetters('order.created', { group: 'billing' })) {
 *   if (letter.valid) retryLater(letter.event.data.orderId);
 *   else console.warn(letter.id, letter.error, letter.issues);
 * }
 */
export type EventDeadLetter<M extends EventMap, K extends EventName<M>> = ValidDeadLetter<EventData<M, K>, K> | InvalidDeadLetter;

/** A dead letter whose event passed its schema when read: `event.data` is the schema's output. */
export interface ValidDeadLetter<T, K extends string = string> extends Omit<DeadLetter, 'type' | 'event'> {
  readonly valid: true;
  readonly type: K;
  readonly event: EventEnvelope<T, K>;
}

/** A dead letter that is not a valid event of its type: `event` as read (or undefined), `data: unknown`. */
export interface InvalidDeadLetter extends DeadLetter {
  readonly valid: false;
  /** Why it is not a valid event of the type: zod's issues for the payload (paths within `data`), or one root issue. */
  readonly issues: readonly ValidationIssue[];
}

export interface Subscription {
  readonly type: string;
  readonly group: string;
  readonly consumer: string;
  /** Its state and last delivery, with no round trip (`bus.health()` gives every subscription's). */
  health(options?: HealthOptions): SubscriptionHealth;
  /** Stop consuming; in-flight handlers finish first (up to the drain timeout). */
  close(): Promise<void>;
}

/** Options of `publishMany`: `key` may derive a key per event. */
export interface PublishManyOptions<T = unknown> extends Omit<PublishOptions, 'key'> {
  key?: string | ((data: T, index: number) => string | undefined) | undefined;
}

/** What makes a publish delayed: `delayMs` or `deliverAt` set, not both (docs/delayed-delivery.md). */
export type DelayedPublishOptions = { delayMs: number; deliverAt?: undefined } | { deliverAt: Date | number; delayMs?: undefined };

/** Options of `bus.idle()`. */
export interface IdleOptions<K extends string = string> {
  /** Only the subscriptions of this event type. @default every subscription of the bus */
  type?: K | undefined;
  /** How long to wait before rejecting with `TimeoutError`. @default the bus's `drainTimeoutMs` (30000) */
  timeoutMs?: number | undefined;
}
