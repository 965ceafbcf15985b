/**
 * The one errors module. Every error eventlane throws is an {@link EventlaneError} with a stable
 * `code`; transport failures keep the underlying error as `cause`.
 */
import { redactCause } from './redact.js';

/** Stable error codes. Match on `code`, never on `message`. */
export type EventlaneErrorCode =
  | 'ERR_CONFIG'
  | 'ERR_VALIDATION'
  | 'ERR_UNKNOWN_EVENT'
  | 'ERR_SERIALIZATION'
  | 'ERR_PAYLOAD_TOO_LARGE'
  | 'ERR_CLOSED'
  | 'ERR_BACKPRESSURE'
  | 'ERR_TIMEOUT'
  | 'ERR_TRANSPORT'
  | 'ERR_CONNECTION'
  | 'ERR_REPLICATION'
  | 'ERR_PUBLISH_PARTIAL'
  | 'ERR_DECODE'
  | 'ERR_HANDLER'
  | 'ERR_UNKNOWN_TRANSPORT'
  | 'ERR_NATIVE';

export interface EventlaneErrorOptions {
  cause?: unknown;
  /** Whether retrying the same operation may succeed. Consumers dead-letter non-retryable failures at once. */
  retryable?: boolean;
}

/** Every error eventlane throws. Its cause chain carries no credential (`redactCause`). */
export class EventlaneError extends Error {
  readonly code: EventlaneErrorCode;
  readonly retryable: boolean;

  constructor(code: EventlaneErrorCode, message: string, options: EventlaneErrorOptions = {}) {
    super(message, options.cause === undefined ? undefined : { cause: redactCause(options.cause) });
    this.name = new.target.name;
    this.code = code;
    this.retryable = options.retryable ?? false;
  }
}

/** One problem found by a schema, with the path to the offending field. */
export interface ValidationIssue {
  path: (string | number)[];
  message: string;
  code?: string;
}

/** A config object or an event payload failed its schema. `issues` lists every problem found. */
export class ValidationError extends EventlaneError {
  readonly issues: ValidationIssue[];
  constructor(message: string, issues: ValidationIssue[], options: EventlaneErrorOptions = {}) {
    super('ERR_VALIDATION', message, options);
    this.issues = issues;
  }
}

/** Invalid bus or transport configuration; the message names the field. */
export class ConfigError extends EventlaneError {
  readonly issues: ValidationIssue[];
  constructor(message: string, issues: ValidationIssue[] = [], options: EventlaneErrorOptions = {}) {
    super('ERR_CONFIG', message, options);
    this.issues = issues;
  }
}

/** The event name is not in the bus's event map. */
export class UnknownEventError extends EventlaneError {
  readonly eventType: string;
  constructor(eventType: string, known: readonly string[]) {
    super('ERR_UNKNOWN_EVENT', `Unknown event type "${eventType}". Declared events: ${known.length ? known.join(', ') : '(none)'}.`);
    this.eventType = eventType;
  }
}

/** A payload could not be encoded (BigInt, cycles, functions...). */
export class SerializationError extends EventlaneError {
  constructor(message: string, options: EventlaneErrorOptions = {}) {
    super('ERR_SERIALIZATION', message, options);
  }
}

/** An encoded event is larger than the transport accepts. */
export class PayloadTooLargeError extends EventlaneError {
  readonly size: number;
  readonly limit: number;
  /** `options`: bytes of `size` that are the publish options (key, ids, headers) rather than the payload. */
  constructor(size: number, limit: number, option: string, options = 0) {
    const of = options > 0 ? ` (${size - options} of payload, ${options} of publish options: key, ids, headers)` : '';
    super('ERR_PAYLOAD_TOO_LARGE', `Encoded event is ${size} bytes${of}; the limit is ${limit} bytes (option ${option}).`);
    this.size = size;
    this.limit = limit;
  }
}

/** The bus, subscription or transport was closed. */
export class ClosedError extends EventlaneError {
  constructor(what = 'event bus') {
    super('ERR_CLOSED', `The ${what} is closed.`);
  }
}

/** Too many events are buffered in the client and `batching.onFull` is `'reject'`. */
export class BackpressureError extends EventlaneError {
  constructor(pending: number, limit: number, adding = 1) {
    super(
      'ERR_BACKPRESSURE',
      adding > 1
        ? `${adding} events do not fit: ${pending} are already buffered (limit ${limit}); nothing was sent. Raise batching.maxPendingEvents or set batching.onFull to 'wait'.`
        : `${pending} events are already buffered (limit ${limit}); raise batching.maxPendingEvents or set batching.onFull to 'wait'.`,
      { retryable: true },
    );
  }
}

/** An operation did not finish in time; the message names the option that sets the limit. */
export class TimeoutError extends EventlaneError {
  constructor(message: string, options: EventlaneErrorOptions = {}) {
    super('ERR_TIMEOUT', message, { retryable: true, ...options });
  }
}

/** The transport failed to write or read; `cause` holds the underlying error. */
export class TransportError extends EventlaneError {
  constructor(message: string, options: EventlaneErrorOptions = {}) {
    super('ERR_TRANSPORT', message, { retryable: true, ...options });
  }
}

/** The transport's server could not be reached; the message names the address. */
export class ConnectionError extends EventlaneError {
  constructor(message: string, options: EventlaneErrorOptions = {}) {
    super('ERR_CONNECTION', message, { retryable: true, ...options });
  }
}

/**
 * A write reached the server but too few replicas acknowledged it in time (Redis `WAIT`, option
 * `transport.waitForReplicas`). The events are stored on the master, so publishing them again may store
 * them twice; if the master fails before they replicate, they are gone.
 */
export class ReplicationError extends EventlaneError {
  constructor(
    message: string,
    /** Replicas that acknowledged the write. */
    readonly acknowledged: number,
    /** Replicas required. */
    readonly required: number,
    options: EventlaneErrorOptions = {},
  ) {
    super('ERR_REPLICATION', message, { retryable: true, ...options });
  }
}

/**
 * A `publishMany` call of which the transport accepted some events and refused others. `failed` lists
 * the indexes (into the payloads array, ascending) of the events not confirmed as written; every other
 * event of the call was written. Publishing `failed.map((i) => payloads[i])` again retries exactly those
 * (an event whose write timed out may have been stored anyway: at least once). `cause` is the failure of
 * the lowest failed index, `errors` every distinct failure. A call of which no event was written rejects
 * with the transport's error itself, as `publish` does.
 */
export class PublishPartialError extends EventlaneError {
  constructor(
    type: string,
    /** Indexes of the payloads not confirmed as written, ascending. */
    readonly failed: readonly number[],
    /** How many events of the call were written. */
    readonly accepted: number,
    /** Every distinct failure (one of each class and message), in the order of the first index it failed. */
    readonly errors: readonly Error[],
  ) {
    const first = errors[0]!;
    super(
      'ERR_PUBLISH_PARTIAL',
      `publishMany("${type}"): ${failed.length} of ${failed.length + accepted} events were not written (${first.message}); the other ${accepted} were. error.failed lists the indexes to publish again.`,
      { cause: first, retryable: errors.every((e) => isRetryable(e)) },
    );
  }
}

/** A stored entry could not be decoded (written by someone else, corrupted, unknown version). */
export class DecodeError extends EventlaneError {
  constructor(message: string, options: EventlaneErrorOptions = {}) {
    super('ERR_DECODE', message, options);
  }
}

/** No transport factory is registered under the configured `transport.type`. */
export class UnknownTransportError extends EventlaneError {
  constructor(type: string, known: readonly string[]) {
    super('ERR_UNKNOWN_TRANSPORT', `No transport registered as "${type}". Registered: ${known.join(', ')}.`);
  }
}

/** The native addon failed (load, bad argument, internal state). */
export class NativeError extends EventlaneError {
  constructor(message: string, options: EventlaneErrorOptions = {}) {
    super('ERR_NATIVE', message, options);
  }
}

/** Throw this from a handler to dead-letter the event at once instead of retrying it. */
export class NonRetryableError extends EventlaneError {
  constructor(message: string, options: EventlaneErrorOptions = {}) {
    super('ERR_HANDLER', message, { ...options, retryable: false });
  }
}

/**
 * Whether a handler failure should be retried: everything is, unless it says `retryable: false`. Read from
 * the error, not its class: a `NonRetryableError` of another copy of this package (its CommonJS build
 * beside the ES module one, a second install) is no instance of this copy's class, yet must not be retried.
 */
export function isRetryable(err: unknown): boolean {
  if (err instanceof EventlaneError) return err.retryable;
  return !(err instanceof Error && (err as { retryable?: unknown }).retryable === false);
}

/** A short, single-line description of any thrown value, for DLQ records and logs. */
export function describeError(err: unknown): string {
  if (err instanceof Error) return `${err.name}: ${err.message}`;
  try {
    if (typeof err === 'object' && err !== null) {
      // A thrown plain object (some HTTP and RPC clients reject with one): its message, not "[object Object]".
      const o = err as { name?: unknown; code?: unknown; message?: unknown };
      if (typeof o.message === 'string') {
        const code = typeof o.code === 'string' || typeof o.code === 'number' ? ` (${o.code})` : '';
        return `${typeof o.name === 'string' ? o.name : 'Error'}${code}: ${o.message}`;
      }
      const text = String(err);
      if (text === '[object Object]') return truncate(JSON.stringify(err) ?? text, 500);
      return text;
    }
    return String(err);
  } catch {
    return 'unknown error';
  }
}

function truncate(text: string, max: number): string {
  return text.length <= max ? text : `${text.slice(0, max - 1)}…`;
}
