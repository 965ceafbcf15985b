/**
 * The transport seam. A transport moves batches of already-validated events and delivers them to
 * consumer groups. The bus owns validation, envelopes, partition choice and batching; a transport owns
 * the wire, durability and the delivery contract (at-least-once, groups, retry, dead-lettering).
 *
 * Register a factory with `registerTransport(type, factory)`; `createEventBus` picks it by `transport.type`.
 */
import type { SubscriptionProgress, TransportHealth } from './health.js';
import type { JsonWriter } from './json-writer.js';
import type { ReaderPlan } from './json-reader.js';
import type { Logger } from './logger.js';
import type { DeliveryObserver } from './failure-log.js';
import type { EventEnvelope, EventHeaders } from './envelope.js';
import type { GroupCounts, GroupTarget } from './group-counts.js';
import type { TransportScheduling } from './scheduling.js';

/** One event on its way out, built once by the bus and never copied. */
export interface OutgoingEvent {
  readonly id: string;
  readonly type: string;
  readonly time: number;
  readonly key: string | undefined;
  readonly data: unknown;
  /**
   * `JSON.stringify(data)`, set when the transport asked for `encoding: 'json'` or the schema could not
   * prove the payload encodable. Reuse it: encode once.
   */
  readonly json: string | undefined;
  /** Partition index in `[0, partitionsFor(type))`. */
  readonly partition: number;
  readonly correlationId: string | undefined;
  readonly causationId: string | undefined;
  readonly headers: EventHeaders | undefined;
}

/**
 * Consecutive events of one `publishMany` call in one lane, handed to a transport that reads runs
 * (`TransportCapabilities.input` `runs` or `runBytes`) without an `OutgoingEvent` object per event. They share type, time, key
 * and options; event `i` (0 <= i < count) carries the payload `values[i]` (encoded as `jsons[i]` when the bus
 * encoded it at publish) and the id `idHeadAt(idPrefix, firstSeq + i) + idTail((firstSeq + i) & 1023)`
 * (`id(i)`; src/envelope.ts). `events()` builds the `OutgoingEvent`s, for paths that want them.
 */
export interface EventRun {
  readonly type: string;
  readonly time: number;
  readonly key: string | undefined;
  readonly correlationId: string | undefined;
  readonly causationId: string | undefined;
  readonly headers: EventHeaders | undefined;
  readonly partition: number;
  readonly count: number;
  /** The payloads; for a run that carries `bytes`, decoded from them when first read (slow: read `bytes`). */
  readonly values: readonly unknown[];
  /** The payloads as JSON bytes, written at publish for a transport that asked for them (`input: { kind: 'runBytes' }`); else undefined. */
  readonly bytes: RunBytes | undefined;
  /** Undefined when no event of the run was encoded at publish. */
  readonly jsons: readonly (string | undefined)[] | undefined;
  /** Time and process part of every id of the run (16 characters). */
  readonly idPrefix: string;
  /** Sequence number of the first event's id. */
  readonly firstSeq: number;
  id(i: number): string;
  events(): OutgoingEvent[];
}

/**
 * The payloads of a run as the JSON of the schema's parsed output, printable ASCII (so a byte is a UTF-16 unit),
 * written by the bus at publish (`TransportCapabilities.input` `runBytes`). Record i spans `[i === 0 ? start :
 * ends[i - 1], ends[i])` of `buffer`: first `room` bytes the transport may overwrite with its own header, then
 * the payload. The records of a run are back to back; the buffer is the publish call's, shared by its runs, and
 * the bus reuses it once every unit of the call has settled: a transport must not read it once the unit that
 * carries it has settled (its write returned, or the unit was settled through `WriteSettlement`).
 */
export interface RunBytes {
  readonly buffer: Buffer;
  readonly start: number;
  readonly ends: Uint32Array;
  readonly room: number;
}

/**
 * Events of one (type, partition) lane collected by the batcher. The bus settles every publish promise with
 * the fate of its own event's unit, so a transport reports each unit written or failed as a whole (a transport
 * that cannot fail a unit as a whole makes units of one event, `TransportCapabilities.units.maxEvents`, or
 * says how many of its first events were written, `units.partial` and `WriteSettlement.failed`).
 */
export interface PublishUnit {
  readonly type: string;
  readonly partition: number;
  readonly events: OutgoingEvent[];
  /**
   * Set when the unit carries a run of a `publishMany` call (only for a transport whose `capabilities.input`
   * is `runs` or `runBytes`): the events are then in `run`, and `events` is empty.
   */
  readonly run?: EventRun | undefined;
  /**
   * Size of the unit's payloads as counted toward `batching.maxBytes`: `json.length` of events encoded at
   * publish, else the schema's compiled size estimate (0 where the schema has none). A sizing hint only.
   */
  readonly bytes: number;
  /**
   * A transport that has encoded the unit (and will not read `events` again) may call this so the
   * events can be collected while the write is in flight; `events` is empty afterwards. Set on the
   * batcher's units; optional for units a transport builds itself.
   */
  release?(): void;
}

/**
 * What a write's return value says of the units not settled through its `WriteSettlement`: `undefined` when
 * every one of them was written, otherwise one entry per unit of the write, `undefined` for a written unit and
 * the error for a failed one (none of its events written: a unit written in part is reported with
 * `WriteSettlement.failed`). The entry of a unit already settled through the settlement is ignored.
 */
export type WriteResult = void | undefined | ReadonlyArray<Error | undefined>;

/**
 * How a write reports each unit's fate as soon as it is known, given by the batcher with every write (one per
 * write). A transport that learns every unit's fate when its write completes ignores it and returns the
 * result (`WriteResult`); the write's return value settles every unit the settlement did not. The first report
 * of a unit settles it: later reports of it (through the settlement, or the write's result) are ignored, as
 * are reports once the write has settled, and reports of an index that is not a unit of the write. Reports
 * may come during `write` or after it returned.
 */
export interface WriteSettlement {
  /**
   * `units[unit]` was durably written, all its events: its publishes resolve now, and its events stop counting
   * as pending (`batching.maxPendingEvents`), whatever the rest of the write does.
   */
  written(unit: number): void;
  /**
   * `units[unit]` failed: its first `writtenEvents` events (default 0) were written and the rest were not. The
   * publishes of the written ones resolve and the others reject with `err` (a `TransportError` wrapping it
   * unless it is an `EventlaneError`); `publishMany` counts the written ones as accepted in its
   * `PublishPartialError`. A transport that may report `writtenEvents` > 0 sets
   * `capabilities.units.partial`, so that `publish()` calls sharing a unit get promises of their own.
   */
  failed(unit: number, err: Error, writtenEvents?: number): void;
  /**
   * The rest of this write waits on something slow that other writes need not wait for (one node of several
   * in failover): the write stops counting against the batcher's `maxInFlight`, so later batches are handed
   * to the transport while it is out (`bus.stats().slotsFreed` counts such writes). Its unsettled events still
   * count as pending until they settle. Once is enough; later calls do nothing.
   */
  stalled(): void;
}

/** Backoff between redeliveries of a failed event. */
export interface BackoffOptions {
  /** @default 100 */
  initialMs: number;
  /** @default 30000 */
  maxMs: number;
  /** @default 2 */
  multiplier: number;
  /** Fraction of random jitter, 0..1. @default 0.2 */
  jitter: number;
}

/** What a subscription asks of the transport (already validated and defaulted by the bus). */
export interface SubscriptionSpec {
  readonly type: string;
  /** Consumer group: every group gets every event; members of a group share the work. */
  readonly group: string;
  /** Stable consumer name inside the group. */
  readonly consumer: string;
  /** Handlers running at once for this subscription. */
  readonly concurrency: number;
  /** Where a new group starts: `'$'` new events only, `'0'` everything retained. */
  readonly startFrom: '$' | '0';
  /** Total attempts before an event is dead-lettered. */
  readonly maxDeliveries: number;
  readonly backoff: BackoffOptions;
  /** How long `close()` waits for in-flight handlers. */
  readonly drainTimeoutMs: number;
  /**
   * The application's `validateOnConsume`: events are checked against their schema before a handler runs.
   * The bus wraps the handler functions it passes with the check; a transport that loads handlers itself
   * (native worker threads) applies it where they run, with the schema the handler module carries
   * (`defineHandler`).
   */
  readonly validateOnConsume: boolean;
  /**
   * What the bus observes of deliveries (it logs failures and dead letters): the delivery engine reports each
   * failed handler with its verdict here. A transport whose engines run where the bus is not (other threads)
   * leaves it out there.
   */
  readonly observer?: DeliveryObserver | undefined;
  /**
   * The transport's type (`Transport.type`), set by the bus: the delivery engine tells it to the
   * `eventlane:process` channel (OpenTelemetry's `messaging.system`). A transport that builds its engine's spec
   * itself passes it on.
   */
  readonly transport?: string | undefined;
  /** Transport-specific options (`minIdleMs`, `blockMs`, `workers`, `handler`...), validated by the transport. */
  readonly options: Readonly<Record<string, unknown>>;
}

/** Per-delivery context given to handlers. */
export interface DeliveryContext {
  /** 1 on first delivery. */
  readonly attempt: number;
  readonly group: string;
  readonly consumer: string;
  /** Partition the event came from. */
  readonly partition: number;
}

/**
 * Called by the transport for each delivered event. Resolve to ack; reject to retry (with backoff)
 * or, when the error is not retryable (`isRetryable`), to dead-letter at once. The bus's wrapper
 * validates `event.data` against the schema first and throws a non-retryable `ValidationError`.
 */
export type DeliveryHandler = (event: EventEnvelope, ctx: DeliveryContext) => void | Promise<void>;

export interface TransportSubscription {
  /** Stop taking new events, finish in-flight handlers (up to `drainTimeoutMs`), ack, release. */
  close(): Promise<void>;
  /**
   * `bus.health()`: the subscription's state and last delivery, from what the transport holds (no round trip).
   * `DeliveryEngine.progress` gives an engine's; a transport adds `reconnecting` while it cannot read.
   */
  health?(stallMs: number): SubscriptionProgress;
}

/**
 * An event that exhausted its deliveries (or could not be decoded), as stored in a dead-letter queue.
 * Its payload is unchecked (`event.data: unknown`); `bus.deadLetters` checks it against the event's
 * schema and types it (`EventDeadLetter`).
 */
export interface DeadLetter {
  readonly id: string;
  readonly type: string;
  readonly group: string;
  readonly partition: number;
  readonly attempts: number;
  readonly error: string;
  /**
   * The envelope when it could be decoded; otherwise undefined and `raw` holds what was read. Its `data` is
   * as stored: it may not match the schema (a `ValidationError` on consume dead-letters the event).
   */
  readonly event: EventEnvelope | undefined;
  readonly raw?: unknown;
  readonly deadAt: number;
}

export interface TransportCapabilities {
  /**
   * `'json'`: the bus fills `OutgoingEvent.json` at publish for every event.
   * `'none'`: the bus encodes at publish only when it must (the schema cannot prove the payload
   * encodable, or an exact size check is needed); a transport that writes bytes encodes the rest at
   * write time with `ctx.serializer(type)`, so nothing but the payload object waits in a batch.
   */
  readonly encoding: 'json' | 'none';
  /** Writes the batcher may keep in flight at once. */
  readonly maxInFlight: number;
  /** Largest encoded event accepted, in bytes; checked at publish when `json` is known. */
  readonly maxEventBytes: number;
  /** What the transport reads of the events it is handed (default `{ kind: 'events' }`): see {@link PublishInput}. */
  readonly input?: PublishInput;
  /** How the batcher cuts units for the transport (default: no bound but the batch's): see {@link UnitForm}. */
  readonly units?: UnitForm;
}

/**
 * The form in which the bus hands a transport the events of a `publishMany` call (single publishes are always
 * `OutgoingEvent`s in `PublishUnit.events`):
 * - `events`: as `OutgoingEvent`s too; `PublishUnit.run` is never set.
 * - `runs`: a call's events of one lane may come as a run (`PublishUnit.run`, an `EventRun`), with no
 *   `OutgoingEvent` per event: the transport must read `run` when it is set (the unit's `events` are then
 *   empty).
 * - `runBytes`: as `runs`, and the bus writes the payloads of a call as JSON bytes at publish, where the type's
 *   schema has a compiled checking writer (`src/checked-writer.ts`) and the call has no key or options,
 *   leaving `room` bytes before each for the transport's record header. The transport must read `run.bytes`
 *   when it is set (`values` and `jsons` are then read only by decoding the bytes, slowly) and not after the
 *   unit has settled (`RunBytes`). The checked payloads are not copied: the bytes are what the call published,
 *   so a transport that writes the payload after a fixed header can push a run's records where they are.
 */
export type PublishInput = { readonly kind: 'events' } | { readonly kind: 'runs' } | { readonly kind: 'runBytes'; readonly room: number };

/**
 * How the batcher cuts the units it hands a transport (`TransportCapabilities.units`). Each bound applies to
 * single events and runs alike (a run is split where it crosses one).
 */
export interface UnitForm {
  /**
   * Most events in one unit (default and at most `batching.maxEvents`). A transport that stores each event on
   * its own, may store some of a unit's and fail others, and cannot say which (Redis per-event entries) sets 1,
   * so that every publish promise settles with the fate of its own event.
   */
  readonly maxEvents?: number;
  /**
   * Most bytes (as counted toward `batching.maxBytes`) in one unit (default and at most `batching.maxBytes`). A
   * transport that takes a unit whole or not at all into a store of bounded size (the native rings under
   * `error`) sets what an empty store surely holds, so that no unit is refused for its size alone.
   */
  readonly maxBytes?: number;
  /**
   * The transport may write a unit's first events and fail the rest, and reports it with
   * `WriteSettlement.failed(unit, err, writtenEvents)`. `publish()` then gets a promise of its own per event
   * (one more promise per event), so that each settles with its own event's fate. Without it, the `publish()`
   * calls of a unit share one promise, which rejects when the unit fails, whatever it says was written.
   */
  readonly partial?: boolean;
}

/** What every transport implements. */
export interface Transport {
  readonly type: string;
  readonly capabilities: TransportCapabilities;
  /** Connect; rejects with a typed error (e.g. `ConnectionError` naming the URL) when it cannot. */
  connect(): Promise<void>;
  /** Partitions of an event type, called once per type after `connect` and cached (raised: `watchPartitions`). */
  partitionsFor(type: string): number;
  /**
   * Registers the bus's listener of raised partition counts: the transport calls it with a type and its new
   * count, higher than any it reported before for the type (counts are never lowered). The bus then routes
   * that type's events over the new count.
   */
  watchPartitions?(listener: (type: string, partitions: number) => void): void;
  /**
   * A hint for transports whose consumers block waiting for events (in-process, other threads): for a type, a
   * probe the batcher calls as a `publish()` adds to an open batch for `partition` (with `batching.maxWaitMs`
   * 0). True means a consumer started to wait for that partition's events since the probe last said true: the
   * batch leaves at once instead of at the next microtask, so a synchronous burst of publishes feeds an idle
   * consumer as it goes ("smart batching": what piles up while the consumer wakes and works leaves together
   * when it waits again). Called once per type; the probe is called on the publish path, so it must be cheap.
   */
  sendNowProbe?(type: string): ((partition: number) => boolean) | undefined;
  /**
   * Write units; resolves once the transport has durably written them, or failed to. Each unit settles with
   * the first report of its fate: through `settle` (always given by the batcher; see {@link WriteSettlement}),
   * or else through the return value, resolved or returned (see {@link WriteResult}); a rejection (or a throw)
   * fails every unit not settled through `settle`. A transport that completed the write before returning
   * (in-process) may return the result itself instead of a promise: the batcher then frees the write slot at
   * once, so a synchronous publish loop keeps handing full batches to consumers instead of filling every slot
   * and waiting for the loop to end.
   */
  write(units: readonly PublishUnit[], settle: WriteSettlement): Promise<WriteResult> | WriteResult;
  /**
   * `bus.tryPublish`: writes `unit` now when the transport can take all of it without waiting, else writes
   * nothing and returns false ("full"). Synchronous, so only in-process transports have it. Throws the
   * typed errors `write` would fail the unit with (closed, too large).
   */
  tryWrite?(unit: PublishUnit): boolean;
  /** Delayed delivery stored by the transport; without it the bus holds delayed events until due (src/scheduling.ts). */
  readonly scheduling?: TransportScheduling;
  subscribe(spec: SubscriptionSpec, handler: DeliveryHandler): Promise<TransportSubscription>;
  /** Dead letters of a type (and group), oldest first. */
  deadLetters?(type: string, group?: string, limit?: number): Promise<DeadLetter[]>;
  /**
   * `bus.idle()`: how many events of `type` the consumer group `group` has not finished: not yet delivered,
   * being handled, or waiting for another attempt (an event is finished once handled or dead-lettered). 0
   * means the group has caught up with everything written so far. May over-count (it is polled until 0), never
   * report 0 while the group still has an event to finish, except where the transport's docs say otherwise.
   */
  unfinished?(type: string, group: string): Promise<number> | number;
  /** `bus.health()`: whether the transport's connections are up, from what it holds (no round trip). */
  health?(): Omit<TransportHealth, 'type'>;
  /**
   * `bus.groupCounts()` (read at metrics scrape time): where each target group stands, in events, one
   * `GroupCounts` per target in order; a count it cannot tell is undefined. Bounded work per group and
   * partition, however large the backlog (estimate past a bound, and say so in the transport's docs).
   */
  groupCounts?(targets: readonly GroupTarget[]): Promise<GroupCounts[]>;
  /** Release connections and threads. Subscriptions and pending writes are closed by the bus first. */
  close(): Promise<void>;
}

/** What a transport factory receives. */
export interface TransportContext {
  /** The bus's `service`, written as the envelope `source`. */
  readonly service: string;
  readonly logger: Logger;
  /** The declared event names. */
  readonly eventTypes: readonly string[];
  /**
   * The fastest exact JSON encoder for a type's validated payload (schema-compiled where possible,
   * else `JSON.stringify`). Use as `event.json ?? serializer(event.type)(event.data)`.
   */
  serializer(type: string): (data: unknown) => string;
  /**
   * A schema-compiled writer of a type's validated payload as JSON bytes straight into a buffer, or
   * undefined where the schema needs the string encoder. Its bytes equal `serializer(type)(data)` in UTF-8;
   * it returns `NEEDS_STRING` for a value with strings to escape or non-ASCII text (encode that one with
   * `serializer`) and `NO_ROOM` when the buffer is too small (see `src/json-writer.ts`).
   */
  jsonWriter?(type: string): JsonWriter | undefined;
  /**
   * The reader plan of a type's payload JSON (`src/json-reader.ts`), or undefined where the schema needs
   * JSON.parse. `jsonReader(plan)` compiles a parser that returns exactly what JSON.parse returns, faster
   * for the text the writers produce; a plan is plain data, so worker threads can compile it too.
   */
  readerPlan?(type: string): ReaderPlan | undefined;
}

/** Builds a transport from its config block (`transport`, `type` included); throws `ConfigError` naming a bad field. */
export type TransportFactory = (config: Record<string, unknown>, ctx: TransportContext) => Transport | Promise<Transport>;
