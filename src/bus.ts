/**
 * The event bus: typed publish/subscribe over a pluggable transport.
 */
import type { z } from 'zod';
import { Batcher, Lane } from './batcher.js';
import { BulkCall } from './bulk-call.js';
import { batcherOptions, busConfigSchema, formatIssues, deadLettersOptionsSchema, idleOptionsSchema, parseConfig, subscribeOptionsSchema, toIssues } from './config.js';
import { flat, IdGenerator, type EventEnvelope, type PublishOptions } from './envelope.js';
import { checkedKey, checkPublishOptions } from './publish-options.js';
import { BackpressureError, ClosedError, ConfigError, PayloadTooLargeError, SerializationError, TimeoutError, UnknownEventError, ValidationError } from './errors.js';
import type { EventInput, EventMap, EventName } from './events.js';
import { takeConsumerName } from './consumer-names.js';
import { childLogger, silentLogger, type Logger } from './logger.js';
import { partitionForKey } from './partition.js';
import { resolveTransport } from './registry.js';
import { BOUND_PER_ESTIMATE, compileSizeBound, compileSizeEstimate, serializersFor, type Serializer } from './serializer.js';
import { compileValidator, INVALID, type Validator } from './validator.js';
import { compileCheckedWriter, UNSURE } from './checked-writer.js';
import { compileJsonWriter, NO_ROOM, type JsonWriter } from './json-writer.js';
import { readerPlan, type ReaderPlan } from './json-reader.js';
import type { DeadLetter, DeliveryHandler, OutgoingEvent, Transport, TransportSubscription } from './transport.js';
import { EventMeta, Outgoing, Run } from './outgoing.js';
import { registerBuiltinTransports } from './builtin-transports.js';
import type { EventBusConfig, EventDeadLetter, EventHandler, IdleOptions, InvalidDeadLetter, PublishManyOptions, SubscribeOptionsFor, Subscription, ValidDeadLetter } from './bus-types.js';

interface TypeState {
  readonly name: string;
  readonly schema: z.ZodType;
  /** Schema-compiled validator (zod decides whatever it returns INVALID for). */
  readonly validate: Validator;
  /** Schema-compiled JSON encoder, or JSON.stringify for schemas it cannot prove. */
  readonly serialize: Serializer;
  /** Compiled upper bound of the encoded size, when the transport encodes later and has a limit. */
  readonly sizeBound: ((value: unknown) => number) | undefined;
  /** Compiled estimate of the encoded size, counted toward `batching.maxBytes` when not encoded at publish. */
  readonly sizeEstimate: ((value: unknown) => number) | undefined;
  readonly partitions: number;
  readonly lanes: Lane[];
  readonly encode: boolean;
  /**
   * For a transport that takes runs as bytes (`capabilities.runBytes`): the schema's checking writer (checks
   * and writes a payload in one pass, `compileCheckedWriter`) and its JSON writer (for zod's output where the
   * checking writer is unsure), with which `publishMany` writes payloads as bytes at publish; undefined when
   * either is missing.
   */
  readonly bytes: { readonly check: JsonWriter; readonly writer: JsonWriter } | undefined;
  rr: number;
  /** What single `publish()` calls without options share while the clock stays on one millisecond. */
  meta: EventMeta;
}

export class EventBus<M extends EventMap, T extends string = string> {
  private readonly types = new Map<string, TypeState>();
  private readonly ids = new IdGenerator();
  private readonly batcher: Batcher;
  private readonly subscriptions = new Set<Subscription>();
  /** publishMany calls still queueing slices. */
  private readonly bulkCalls = new Set<Promise<void>>();
  private closing: Promise<void> | undefined;
  /**
   * Set by close() once the subscriptions have drained: publishes are refused from then on. Until then the
   * handlers close() drains may still publish (the next step of their work), and those events are sent.
   */
  private publishClosed: boolean;
  private readonly maxEventBytes: number;
  /** The transport takes a publishMany call's events of one lane as runs (`TransportCapabilities.runs`). */
  private readonly runs: boolean;
  /** Bytes of room before each payload a transport taking runs as bytes wants (`capabilities.runBytes`); else -1. */
  private readonly room: number;
  /** A settled call's byte buffer, for the next call written as bytes (`keepSpare`). */
  private spare: Buffer | undefined = undefined;

  /** @internal use {@link createEventBus} */
  constructor(
    readonly service: string,
    readonly events: M,
    readonly transport: Transport,
    private readonly config: ReturnType<typeof busConfigSchema.parse>,
    readonly logger: Logger,
    serializers: Map<string, Serializer> = serializersFor(events.schemas),
  ) {
    // Written twice: a field that no object of its shape has ever rewritten is a constant to V8's
    // optimizing compiler, and optimized code may rely on that. `closing` is first rewritten by close(), so
    // without this the first bus closed in a process would throw away the optimized publish path of every
    // later bus (the next benchmark iteration's, a bus per test or per serverless invocation), which would run
    // unoptimized until V8 compiles it again. The same holds for the batcher's and the transports' closed
    // flags, and the id generator's clock.
    this.closing = Promise.resolve();
    this.closing = undefined;
    this.publishClosed = true;
    this.publishClosed = false;
    const caps = transport.capabilities;
    this.maxEventBytes = caps.maxEventBytes;
    this.runs = caps.runs === true;
    this.room = this.runs && caps.runBytes !== undefined ? caps.runBytes.room : -1;
    const limited = caps.maxEventBytes < Number.MAX_SAFE_INTEGER;
    for (const name of events.names) {
      const partitions = transport.partitionsFor(name);
      if (!Number.isInteger(partitions) || partitions < 1) {
        throw new ConfigError(`Transport "${transport.type}" reported ${partitions} partitions for "${name}".`);
      }
      const sendNow = transport.sendNowProbe?.(name);
      const lanes = Array.from({ length: partitions }, (_, p) => new Lane(name, p, sendNow));
      const schema = events.schemas[name]!;
      const eager = caps.encoding === 'json' || events.needsEncodeCheck.has(name);
      const sizeBound = !eager && limited ? compileSizeBound(schema) : undefined;
      const check = this.room >= 0 ? compileCheckedWriter(schema) : undefined;
      const writer = check !== undefined ? compileJsonWriter(schema) : undefined;
      const bytes = check !== undefined && writer !== undefined ? { check, writer } : undefined;
      this.types.set(name, {
        name,
        schema,
        validate: compileValidator(schema) ?? invalidAlways,
        serialize: serializers.get(name)!,
        sizeBound,
        sizeEstimate: eager ? undefined : compileSizeEstimate(schema),
        partitions,
        lanes,
        // Encode at publish when the transport wants JSON, when only encoding proves the payload
        // encodable, or when a size limit must be checked and no compiled bound exists.
        encode: eager || (limited && sizeBound === undefined),
        bytes,
        rr: 0,
        meta: new EventMeta(name, 0, undefined),
      });
    }
    this.batcher = new Batcher((units, freeSlot, unitWritten) => transport.write(units, freeSlot, unitWritten), batcherOptions(config.batching, caps));
  }

  /**
   * Publishes one event. Resolves once the transport accepted it; rejects with a typed error otherwise.
   * Invalid names or payloads reject before anything is sent.
   * @example await bus.publish('order.created', { orderId: 'o-1', amount: 10 }, { key: 'customer-7' });
   */
  publish<K extends EventName<M>>(type: K, data: EventInput<M, K>, options?: PublishOptions): Promise<void> {
    if (this.publishClosed) return Promise.reject(new ClosedError());
    const t = this.types.get(type);
    if (t === undefined) return Promise.reject(new UnknownEventError(type, this.events.names));
    try {
      return this.enqueue(t, data, options, options?.key, options !== undefined ? checkPublishOptions('publish', options) : 0);
    } catch (err) {
      return Promise.reject(err);
    }
  }

  /**
   * Publishes one event now, without waiting: true when the transport took it, false when it has no room
   * for it now (nothing was sent; `publish` would wait, or apply the transport's backpressure strategy).
   * Events published before it go first: a partition still waiting for room for them counts as full.
   * Invalid names or payloads throw, as `publish` rejects; so does a transport without a synchronous
   * write (`native` and `memory` have one, `redis-streams` does not).
   * @example if (!bus.tryPublish('tick.received', tick)) skipped++;
   */
  tryPublish<K extends EventName<M>>(type: K, data: EventInput<M, K>, options?: PublishOptions): boolean {
    if (this.publishClosed) throw new ClosedError();
    const t = this.types.get(type);
    if (t === undefined) throw new UnknownEventError(type, this.events.names);
    if (this.transport.tryWrite === undefined) {
      throw new ConfigError(`The ${this.transport.type} transport has no synchronous write: use publish(), which waits for room.`);
    }
    const value = this.parse(t, data, -1, options !== undefined ? checkPublishOptions('tryPublish', options) : 0);
    // Kept before flushing: a handler run inside that write (memory) may publish, and parse again.
    const json = this.parsedJson;
    const size = this.parsedSize;
    // What is buffered goes to the transport first (an in-process write completes now); if some of it
    // cannot, this event would overtake it.
    if (this.batcher.pendingEvents > 0 && !this.batcher.flushSync()) return false;
    const ev = this.make(t, value, json, this.metaOf(t, options), options?.key);
    const ok = this.transport.tryWrite({ type: t.name, partition: ev.partition, events: [ev], bytes: size });
    if (ok) this.batcher.countWritten();
    return ok;
  }

  /**
   * Publishes many events of one type. Every payload is validated before any is queued, so one bad
   * payload rejects the call and sends nothing. Resolves when all were accepted.
   */
  publishMany<K extends EventName<M>>(type: K, payloads: readonly EventInput<M, K>[], options?: PublishManyOptions<EventInput<M, K>>): Promise<void> {
    if (this.publishClosed) return Promise.reject(new ClosedError());
    const t = this.types.get(type);
    if (t === undefined) return Promise.reject(new UnknownEventError(type, this.events.names));
    if (!Array.isArray(payloads)) return Promise.reject(new ValidationError(`publishMany("${type}") expects an array of payloads.`, []));
    const keyOpt = options?.key;
    const keyFn = typeof keyOpt === 'function' ? keyOpt : undefined;
    const fixedKey = typeof keyOpt === 'string' ? keyOpt : undefined;
    // All-or-nothing: every payload is validated (and encoded where needed) before any is queued.
    const n = payloads.length;
    let bulk: BulkCall | undefined;
    try {
      const extra = options !== undefined ? checkPublishOptions('publishMany', options) : 0;
      if (t.bytes !== undefined && n <= BYTES_CALL_MAX && keyOpt === undefined && plainOptions(options)) bulk = this.writeAll(t, payloads);
      if (bulk === undefined) {
        bulk = new BulkCall(n, t.partitions, keyFn !== undefined);
        // A large call keeps its encoded payloads across young-generation GCs: store them flat. Below a few
        // thousand events they die young anyway and the flat store only costs, hence the threshold.
        this.parseAll(t, payloads, bulk, keyFn, n > 4096, extra);
      }
    } catch (err) {
      return Promise.reject(err);
    }
    // onFull 'reject': the whole call is refused up front when it does not fit, so nothing is half-sent.
    if (this.config.batching.onFull === 'reject' && !this.batcher.fits(n)) {
      return Promise.reject(new BackpressureError(this.batcher.pendingEvents, this.config.batching.maxPendingEvents, n));
    }
    const call = this.enqueueMany(t, bulk, fixedKey, options);
    // close() lets calls accepted before it finish every slice (they may be waiting for room).
    this.bulkCalls.add(call);
    call.then(
      () => this.bulkCalls.delete(call),
      () => this.bulkCalls.delete(call),
    );
    return call;
  }

  /**
   * Validates (and where needed encodes) every payload of a publishMany call; throws at the first bad one.
   * Nothing before the loop needs type feedback (see `queueSlice`): this runs once per call, and its first
   * run is over before V8 keeps feedback for what it did before its loop.
   */
  private parseAll(t: TypeState, payloads: readonly unknown[], call: BulkCall, keyFn: ((data: any, i: number) => string | undefined) | undefined, retained: boolean, extra: number): void {
    for (let i = 0; i < payloads.length; i++) {
      call.values[i] = this.parse(t, payloads[i], i, extra);
      const json = this.parsedJson;
      call.jsons[i] = retained && json !== undefined ? flat(json) : json;
      if (json !== undefined) call.encoded = true;
      call.sizes[i] = this.parsedSize;
      if (call.keys) call.keys[i] = checkedKey(keyFn!(payloads[i], i), i);
    }
  }

  /**
   * `parseAll` for a transport that takes runs as bytes (`capabilities.runBytes`): checks every payload and
   * writes its JSON at publish, `room` bytes after the end of the one before, into one buffer for the call. The
   * payloads are not copied: the bytes are what the call publishes. Undefined when some payload has text the
   * writer leaves to the string encoder (to escape, or not ASCII): the call then takes the usual path.
   */
  private writeAll(t: TypeState, payloads: readonly unknown[]): BulkCall | undefined {
    const n = payloads.length;
    const room = this.room;
    const call = new BulkCall(n, t.partitions, false, true);
    const ends = call.ends!;
    const sizes = call.sizes;
    const { check, writer } = t.bytes!;
    let buf = this.takeBuffer(Math.max(1024, n * (room + 64)));
    let o = 0;
    let i = 0;
    try {
      for (; i < n; i++) {
        let value = payloads[i];
        let write = check;
        let end: number;
        for (;;) {
          end = write(value, buf, o + room);
          if (end === UNSURE) {
            value = validated(t, value, i, undefined); // zod's verdict and output, written by the plain writer
            write = writer;
          } else if (end === NO_ROOM) {
            // Room for the rest at the mean size so far (and a tenth more), at least twice the buffer.
            const next = Buffer.allocUnsafeSlow(Math.max(buf.length * 2, Math.ceil(((o + room + 64) / (i + 1)) * n * 1.1)));
            buf.copy(next, 0, 0, o);
            buf = next;
          } else break;
        }
        if (end < 0) break; // NEEDS_STRING
        const size = end - o - room;
        if (size > this.maxEventBytes) throw new PayloadTooLargeError(size, this.maxEventBytes, 'transport.maxEventBytes');
        ends[i] = end;
        sizes[i] = size;
        o = end;
      }
    } finally {
      if (i < n) this.keepSpare(buf); // refused, or left to the usual path: nothing refers to the buffer
    }
    if (i < n) return undefined;
    call.bytes = buf;
    return call;
  }

  /**
   * Queues validated events in batch-sized slices, yielding while every write slot is busy, so a call
   * with 100,000 events does not keep 100,000 envelopes alive at once.
   */
  private async enqueueMany(t: TypeState, call: BulkCall, fixedKey: string | undefined, options: Omit<PublishOptions, 'key'> | undefined): Promise<void> {
    const meta = new EventMeta(t.name, Date.now(), options); // one publish time for the whole call
    const slice = this.config.batching.maxEvents;
    for (let start = 0; start < call.size; start += slice) {
      if (start > 0 && this.batcher.saturated) await this.batcher.writable();
      const end = Math.min(call.size, start + slice);
      // Backpressure per slice, not per event: a call larger than maxPendingEvents paces itself.
      const room = this.batcher.room(end - start);
      if (room !== undefined) await room;
      this.queueSlice(t, call, fixedKey, meta, start, end);
    }
    try {
      await Promise.all(call.pending);
    } catch {
      const err = call.failure(t.name, await Promise.allSettled(call.pending));
      if (err !== undefined) throw err;
    } finally {
      // Every unit settled: no transport reads the call's bytes any more (`RunBytes`).
      if (call.bytes !== undefined) this.keepSpare(call.bytes);
    }
  }

  /**
   * A settled call's byte buffer, kept for the next call written as bytes, up to 8 MiB: a buffer per call would be
   * new memory each time (page faults, and external memory V8 frees only some time after a GC).
   */
  private keepSpare(buf: Buffer): void {
    if (buf.length <= 8 << 20 && (this.spare === undefined || this.spare.length < buf.length)) this.spare = buf;
  }

  /** A buffer of at least `size` bytes for a call written as bytes: the spare when it is large enough. */
  private takeBuffer(size: number): Buffer {
    const spare = this.spare;
    if (spare !== undefined && spare.length >= size) {
      this.spare = undefined;
      return spare;
    }
    return Buffer.allocUnsafeSlow(size);
  }

  /**
   * Queues events `start` to `end` of a publishMany call. Its own function, as is `parseAll`: a long loop
   * in a function that runs once per call is compiled on the fly (OSR) before the code after it ever ran,
   * and V8's optimized code would then give up at that code (no type feedback) on the next call, leaving the
   * second large publishMany of a process to run its loop in the interpreter until compiled again.
   */
  private queueSlice(t: TypeState, call: BulkCall, fixedKey: string | undefined, meta: EventMeta, start: number, end: number): void {
    if (this.runs && call.keys === undefined) return this.queueRuns(t, call, fixedKey, meta, start, end);
    const { values, jsons, sizes, keys } = call;
    for (let i = start; i < end; i++) {
      const ev = this.make(t, values[i], jsons[i], meta, keys ? keys[i] : fixedKey);
      values[i] = undefined;
      jsons[i] = undefined;
      const part = ev.partition;
      const p = this.batcher.addFitted(t.lanes[part]!, ev, sizes[i]!);
      call.track(i, part, p, this.batcher.placedAt);
    }
  }

  /**
   * `queueSlice` for a transport that reads runs, when no event has a key of its own: a `Run` per lane,
   * with consecutive ids, instead of an event object each. With one partition or a fixed key the slice is one
   * run, with the ids, partition and order the per-event path gives. Else round-robin goes by runs: partition
   * after partition (continuing where the last publish left off) takes the next contiguous part of the slice,
   * the parts as even as they can be (the first ones one event larger), so each partition gets as many events
   * as one-by-one round-robin would give it, and ids still increase in publish order.
   */
  private queueRuns(t: TypeState, call: BulkCall, key: string | undefined, meta: EventMeta, start: number, end: number): void {
    const parts = t.partitions;
    if (parts === 1) return this.queueRun(t, call, undefined, meta, 0, start, end);
    if (key !== undefined) return this.queueRun(t, call, key, meta, partitionForKey(key, parts), start, end);
    const m = end - start;
    const q = Math.floor(m / parts);
    const r = m % parts;
    const first = t.rr;
    t.rr += m;
    for (let j = 0, a = start; j < parts && a < end; j++) {
      const b = a + q + (j < r ? 1 : 0);
      this.queueRun(t, call, undefined, meta, (first + j) % parts, a, b);
      a = b;
    }
  }

  private queueRun(t: TypeState, call: BulkCall, key: string | undefined, meta: EventMeta, part: number, start: number, end: number): void {
    const firstSeq = this.ids.reserve(meta.time, end - start);
    let run: Run;
    if (call.bytes !== undefined) {
      const ends = call.ends!;
      const bytes = { buffer: call.bytes, start: start === 0 ? 0 : ends[start - 1]!, ends: ends.subarray(start, end), room: this.room };
      run = new Run(meta, key, part, this.ids.idPrefix, firstSeq, undefined, undefined, bytes);
    } else {
      const values = call.values.slice(start, end);
      const jsons = call.encoded ? call.jsons.slice(start, end) : undefined;
      call.values.fill(undefined, start, end);
      if (jsons !== undefined) call.jsons.fill(undefined, start, end);
      run = new Run(meta, key, part, this.ids.idPrefix, firstSeq, values, jsons, undefined);
    }
    this.batcher.addRun(t.lanes[part]!, run, call.sizes, start, (from, to, p, first) => call.trackRun(start + from, start + to, part, p, first));
  }

  private enqueue(t: TypeState, data: unknown, options: PublishOptions | undefined, key: string | undefined, extra: number): Promise<void> {
    const value = this.parse(t, data, -1, extra);
    const ev = this.make(t, value, this.parsedJson, this.metaOf(t, options), key);
    return this.batcher.add(t.lanes[ev.partition]!, ev, this.parsedSize);
  }

  /** What a single publish shares: per call with options, else one per type while the clock stays on a millisecond. */
  private metaOf(t: TypeState, options: Omit<PublishOptions, 'key'> | undefined): EventMeta {
    const now = Date.now();
    if (options !== undefined) return new EventMeta(t.name, now, options);
    let meta = t.meta;
    if (meta.time !== now) meta = t.meta = new EventMeta(t.name, now, undefined);
    return meta;
  }

  /** Set by `parse`: the encoded payload of the value it returned (undefined when not encoded). */
  private parsedJson: string | undefined = undefined;
  /** Set by `parse`: what the event counts toward `batching.maxBytes` (JSON length, or the schema's estimate). */
  private parsedSize = 0;

  /**
   * Validates (and, where needed, encodes and size-checks) one payload; throws a typed error. `extra`: the
   * bytes of the event's publish options (key, ids, headers), which count toward `maxEventBytes` with it.
   */
  private parse(t: TypeState, data: unknown, index: number, extra: number): unknown {
    const value = validated(t, data, index, undefined);
    let json: string | undefined;
    const limit = this.maxEventBytes - extra;
    // One compiled walk per event in the common case: the bound is at most BOUND_PER_ESTIMATE x the
    // estimate, so it is only computed when the estimate alone cannot rule the event out.
    const estimate = t.encode || t.sizeEstimate === undefined ? undefined : t.sizeEstimate(value);
    const mayExceed = t.sizeBound !== undefined && (estimate === undefined || estimate * BOUND_PER_ESTIMATE > limit) && t.sizeBound(value) > limit;
    if (t.encode || mayExceed || limit < 0) {
      json = encodeJson(t, value);
      if (json.length > limit / 3) {
        const bytes = Buffer.byteLength(json);
        if (bytes > limit) throw new PayloadTooLargeError(bytes + extra, this.maxEventBytes, 'transport.maxEventBytes', extra);
      }
    }
    this.parsedJson = json;
    this.parsedSize = json !== undefined ? json.length : (estimate ?? 0);
    return value;
  }

  private make(t: TypeState, value: unknown, json: string | undefined, meta: EventMeta, key: string | undefined): OutgoingEvent {
    let partition = 0;
    if (t.partitions > 1) {
      if (key !== undefined) partition = partitionForKey(key, t.partitions);
      else partition = t.rr++ % t.partitions;
    }
    const low = this.ids.step(meta.time);
    return new Outgoing(meta, this.ids.head, low, key, value, json, partition);
  }

  /**
   * Consumes `type` as a member of `options.group`.
   * @example await bus.subscribe('order.created', { group: 'billing', concurrency: 16 }, async (e) => charge(e.data));
   * The handler may be omitted when the transport runs handler modules itself (native: `{ workers, handler: url }`).
   */
  async subscribe<K extends EventName<M>>(type: K, options: SubscribeOptionsFor<T>, handler?: EventHandler<M, K>): Promise<Subscription> {
    if (this.closing) throw new ClosedError();
    const t = this.types.get(type);
    if (t === undefined) throw new UnknownEventError(type, this.events.names);
    if (typeof handler !== 'function' && (options as Record<string, unknown> | undefined)?.['handler'] === undefined) {
      throw new ConfigError(`subscribe("${type}") needs a handler function.`);
    }
    const o = parseConfig(subscribeOptionsSchema, options, 'subscribe options');
    const { group, consumer, concurrency, startFrom, maxDeliveries, retry, drainTimeoutMs, ...rest } = o;
    const taken = takeConsumerName(this.service, type, group, consumer, this.logger);
    const consumerName = taken.name;
    // A transforming schema published its output, which it cannot check again as input.
    const validate = this.config.validateOnConsume && !this.events.transforming.has(type);
    const wrapped: DeliveryHandler = (event, ctx) => {
      if (validate) (event as { data: unknown }).data = validated(t, event.data, -1, event.id);
      return (handler as DeliveryHandler)(event, ctx);
    };
    let inner: TransportSubscription;
    try {
      inner = await this.transport.subscribe(
        {
          type,
          group,
          consumer: consumerName,
          concurrency,
          startFrom,
          maxDeliveries,
          backoff: retry.backoff,
          drainTimeoutMs: drainTimeoutMs ?? this.config.drainTimeoutMs,
          options: rest,
        },
        typeof handler === 'function' ? wrapped : (undefined as unknown as DeliveryHandler),
      );
    } catch (err) {
      taken.release();
      throw err;
    }
    let closed: Promise<void> | undefined;
    const sub: Subscription = {
      type,
      group,
      consumer: consumerName,
      close: () => {
        closed ??= inner.close().finally(() => {
          this.subscriptions.delete(sub);
          taken.release();
        });
        return closed;
      },
    };
    this.subscriptions.add(sub);
    return sub;
  }

  /**
   * Dead letters of `type` (optionally of one group), oldest first: events that exhausted
   * `maxDeliveries`, failed non-retryably, or could not be decoded; at most `limit` of them (the built-in
   * transports' default: 1000). Each is checked against the schema when read, whatever `validateOnConsume`
   * says: see {@link EventDeadLetter}. Transport-specific fields (Redis Streams' `ref`) are kept, untyped.
   */
  async deadLetters<K extends EventName<M>>(type: K, options: { group?: string; limit?: number } = {}): Promise<EventDeadLetter<M, K>[]> {
    const t = this.types.get(type);
    if (t === undefined) throw new UnknownEventError(type, this.events.names);
    options = parseConfig(deadLettersOptionsSchema, options ?? {}, 'deadLetters options');
    if (!this.transport.deadLetters) throw new ConfigError(`The ${this.transport.type} transport keeps no dead letters.`);
    const letters = await this.transport.deadLetters(type, options.group, options.limit);
    const trusted = this.events.transforming.has(type);
    return letters.map((letter) => checkedDeadLetter(t, trusted, letter)) as EventDeadLetter<M, K>[];
  }

  /**
   * Publish counters: `events` handed to the transport (written or not: `failedEvents` of them failed),
   * batches, units, writes whose slot was freed while they waited on a slow node (`slotsFreed`); and events
   * buffered now.
   */
  stats(): { events: number; batches: number; units: number; failedEvents: number; slotsFreed: number; pendingEvents: number } {
    return { ...this.batcher.stats, pendingEvents: this.batcher.pendingEvents };
  }

  /**
   * Sends everything buffered; resolves once each of those events was written or failed. It does not
   * reject: a failed event's own `publish` promise says so.
   */
  flush(): Promise<void> {
    return this.batcher.flushAll();
  }

  /**
   * Resolves once every consumer group this bus subscribes to (or those of `options.type`) has finished
   * every event written so far: handled it, or dead-lettered it; none queued, being handled or waiting for a
   * retry. Sends what is buffered first (`flush`). It counts the whole group, whichever process or bus its
   * members are in. Rejects with `TimeoutError` naming the groups still behind after `options.timeoutMs`.
   * Before `close()` of an in-process transport (memory, native) it keeps the events already published
   * from being dropped with the bus; in tests it waits for handlers without sleeping.
   * @example await bus.idle({ timeoutMs: 10_000 }); await bus.close();
   */
  async idle(options: IdleOptions<EventName<M>> = {}): Promise<void> {
    if (this.closing) throw new ClosedError();
    const o = parseConfig(idleOptionsSchema, options ?? {}, 'idle options');
    if (o.type !== undefined && !this.types.has(o.type)) throw new UnknownEventError(o.type, this.events.names);
    const transport = this.transport;
    if (transport.unfinished === undefined) throw new ConfigError(`The ${transport.type} transport cannot tell whether its consumer groups are idle.`);
    const timeoutMs = o.timeoutMs ?? this.config.drainTimeoutMs;
    await this.flush();
    const deadline = performance.now() + timeoutMs;
    // Twice in a row, a poll apart: a count read while an event moves between two places (a message to or
    // from a worker thread, a retry moving streams) cannot end the wait alone.
    let quiet = 0;
    // The groups to watch: those subscribed when it started and since (a subscription closing does not take its group off).
    const groups = new Map<string, [string, string]>();
    for (;;) {
      for (const s of this.subscriptions) if (o.type === undefined || s.type === o.type) groups.set(`${s.type}\0${s.group}`, [s.type, s.group]);
      const pairs = [...groups.values()];
      // Events this bus still buffers (a handler's publish waiting out `batching.maxWaitMs`) are not finished.
      const buffered = this.batcher.pendingEvents;
      if (buffered > 0) void this.flush();
      const counts = await Promise.all(pairs.map(([type, group]) => transport.unfinished!(type, group)));
      // close() while waiting: what is left is dropped with an in-process transport, never finished.
      if (this.closing) throw new ClosedError();
      if (buffered === 0 && counts.every((n) => n === 0)) {
        if (++quiet >= 2) return;
      } else quiet = 0;
      // Past the deadline after a quiet look, one more look decides (a timeoutMs of 0 on an idle bus resolves).
      if (performance.now() >= deadline && quiet === 0) {
        const behind = pairs.flatMap(([type, group], i) => (counts[i]! > 0 ? [`"${type}" group "${group}": ${counts[i]}`] : []));
        if (buffered > 0) behind.push(`${buffered} published by this bus and not yet sent`);
        throw new TimeoutError(`bus.idle() waited ${timeoutMs} ms (options.timeoutMs); events not finished yet: ${behind.join(', ')}.`);
      }
      await new Promise((resolve) => setTimeout(resolve, IDLE_POLL_MS));
    }
  }

  /** Publishes accepted before close (bulk calls' slices, buffered and waiting events), sent and settled. */
  private async sendAccepted(): Promise<void> {
    await Promise.allSettled([...this.bulkCalls]);
    await this.batcher.close();
  }

  /**
   * Waits up to `ms` for `sending`; true when it had not settled by then. A write waiting for room that only
   * this bus's own stuck consumers could make (native `block`) held close() for the transport's
   * publishTimeoutMs (30 s); closing the transport ends such writes: their publishes reject with ClosedError.
   */
  private async late(sending: Promise<void>, ms: number): Promise<boolean> {
    let timer: NodeJS.Timeout | undefined;
    const late = await Promise.race([sending.then(() => false), new Promise<boolean>((resolve) => (timer = setTimeout(resolve, ms, true)))]);
    clearTimeout(timer);
    return late;
  }

  /**
   * Sends what was published (up to `drainTimeoutMs`), drains in-flight handlers (acking them; up to
   * `drainTimeoutMs`), sends what they published meanwhile, then disconnects. Idempotent.
   */
  close(): Promise<void> {
    this.closing ??= this.doClose();
    return this.closing;
  }

  private async doClose(): Promise<void> {
    // What was published before close() goes first, while the subscriptions still consume (in-process: their
    // handlers may take it before they stop).
    const drainMs = this.config.drainTimeoutMs;
    const stuck = await this.late(
      Promise.allSettled([...this.bulkCalls]).then(() => this.batcher.flushAll()),
      drainMs,
    );
    // The handlers still running are drained, and may publish meanwhile: a handler's next event is sent, not
    // refused with ClosedError (which would fail the handler, and lose its event with the bus's retry timers).
    await Promise.allSettled([...this.subscriptions].map((s) => s.close()));
    this.publishClosed = true;
    const sent = this.sendAccepted();
    // Publishes already stuck for drainTimeoutMs get no second wait.
    if (stuck || (await this.late(sent, drainMs))) {
      this.logger.warn({ drainTimeoutMs: drainMs }, 'close(): publishes still waiting for the transport after drainTimeoutMs; closing it rejects them');
    }
    await this.transport.close();
    await sent;
    this.logger.debug({}, 'event bus closed'); // the bus's logger names the service already
    lastClosed = this;
  }
}

/**
 * The last bus closed in this process, kept until another one closes: its objects (the bus, its type states,
 * lanes, batcher and id generator) keep their hidden classes alive. Optimized code holds the maps it checks
 * weakly: a full GC between one bus's close and the next bus's creation (a bus per test, per job or per
 * serverless invocation; each benchmark iteration) that found no object of those maps would throw away the
 * publish path compiled against them ("weak objects" in `--trace-deopt`: `publishMany`, `parse`, `make`,
 * `enqueueMany`, `addFitted`, `step`...), and the next bus would run it in the interpreter until V8 compiled
 * it again. At most one closed bus is kept. Anchors built at load time (as `MAP_ANCHORS` in outgoing.ts) do
 * not work here: these maps depend on the options and transport each bus is built with. A closed bus holds no connection, thread or core memory
 * (its transport released them); what its in-process transport retained for `startFrom: '0'` replays
 * (memory `maxLen`, native `retain`) and its dead letters stay with it until the next bus closes.
 */
let lastClosed: EventBus<EventMap> | undefined;

/** How often `idle()` asks the transport. */
const IDLE_POLL_MS = 5;

function noop(): void {}

/**
 * The parsed output of `data`: the compiled validator's, or zod's where it answers INVALID. Throws a
 * ValidationError naming zod's issues when the payload is invalid: a published one (`index` in a
 * publishMany call, or -1), or a consumed event (`eventId`). Nothing is allocated unless it fails.
 */
function validated(t: TypeState, data: unknown, index: number, eventId: string | undefined): unknown {
  const value = t.validate(data);
  if (value !== INVALID) return value;
  let parsed: ReturnType<z.ZodType['safeParse']>;
  try {
    parsed = t.schema.safeParse(data);
  } catch (err) {
    // zod throws instead of reporting for schemas it cannot run synchronously (async refinements) and
    // for intersections whose sides disagree.
    const message = `Schema of "${t.name}" could not validate ${eventId !== undefined ? `event ${eventId}` : 'the payload'}: ${(err as Error)?.message}`;
    throw new ValidationError(message, [{ path: [], message: String((err as Error)?.message), code: 'custom' }], { cause: err });
  }
  if (parsed.success) return parsed.data;
  // In a publishMany call, each issue's path starts with the payload's index, as zod's own for an array.
  const issues = index >= 0 ? toIssues(parsed.error).map((i) => ({ ...i, path: [index, ...i.path] })) : toIssues(parsed.error);
  const what = eventId !== undefined ? `Event ${eventId} of "${t.name}" does not match its schema` : `Invalid payload for "${t.name}"${index >= 0 ? ` (item ${index})` : ''}`;
  throw new ValidationError(`${what}: ${formatIssues(issues)}`, issues);
}

/** A dead letter as `bus.deadLetters` returns it: `event.data` replaced by the schema's output, or marked invalid. */
function checkedDeadLetter(t: TypeState, trusted: boolean, letter: DeadLetter): ValidDeadLetter<unknown> | InvalidDeadLetter {
  const event = letter.event as EventEnvelope | null | undefined; // stored JSON: could be anything
  const invalid = (message: string): InvalidDeadLetter => ({ ...letter, valid: false, issues: [{ path: [], message, code: 'custom' }] });
  if (event === undefined) return invalid('the event could not be decoded (`raw` holds what was read)');
  if (event === null || typeof event !== 'object') return { ...invalid('the stored event is not an object (in `raw`)'), event: undefined, raw: letter.raw ?? event };
  if (event.type !== t.name || letter.type !== t.name) return invalid(`an event of type "${String(event.type)}", not "${t.name}"`);
  if (trusted) return { ...letter, valid: true, event };
  let data: unknown;
  try {
    data = validated(t, event.data, -1, event.id);
  } catch (err) {
    if (!(err instanceof ValidationError)) throw err;
    return { ...letter, valid: false, issues: err.issues };
  }
  return { ...letter, valid: true, event: { ...event, data } };
}

/**
 * Most events of a `publishMany` call written as bytes at publish (`runBytes`). A call is written whole before
 * any of it is queued; a larger one is kept as checked copies and written slice by slice at write time, so
 * its first slices reach the transport (and its consumers) while the rest are encoded, and its memory is not
 * one buffer of all its payloads.
 */
const BYTES_CALL_MAX = 16_384;

/** Options that leave every event's record plain: no correlation or causation id, no headers. */
function plainOptions(o: Omit<PublishOptions, 'key'> | undefined): boolean {
  return o === undefined || (o.correlationId === undefined && o.causationId === undefined && o.headers === undefined);
}

function invalidAlways(): typeof INVALID {
  return INVALID;
}

function jsonStringify(value: unknown): string {
  return JSON.stringify(value);
}

function encodeJson(t: TypeState, value: unknown): string {
  let json: string | undefined;
  try {
    json = t.serialize(value);
  } catch (err) {
    throw new SerializationError(`Payload of "${t.name}" cannot be encoded as JSON: ${(err as Error).message}`, { cause: err });
  }
  if (json === undefined) throw new SerializationError(`Payload of "${t.name}" encodes to nothing (undefined, a function or a symbol).`);
  return json;
}

/**
 * Creates a bus. Validates the config (a `ConfigError` names the bad field), builds the transport
 * from the registry by `transport.type`, and connects it.
 * @example
 * const bus = await createEventBus({ service: 'checkout', events, transport: { type: 'memory' } });
 */
export async function createEventBus<M extends EventMap, T extends string = string>(config: EventBusConfig<M, T>): Promise<EventBus<M, T>> {
  registerBuiltinTransports();
  if (config === null || typeof config !== 'object') throw new ConfigError('createEventBus() expects a config object.');
  const { events, logger: givenLogger, ...rest } = config;
  if (!events || typeof events !== 'object' || !(events as EventMap).schemas || !(events as EventMap).names) {
    throw new ConfigError('config.events must be the result of defineEvents({...}).', [{ path: ['events'], message: 'not an event map' }]);
  }
  const parsed = parseConfig(busConfigSchema, rest, '');
  const logger = childLogger(givenLogger ?? silentLogger, { lib: 'eventlane', service: parsed.service });
  const factory = await resolveTransport(parsed.transport.type);
  const serializers = serializersFor(events.schemas);
  const writers = new Map<string, JsonWriter | undefined>();
  const plans = new Map<string, ReaderPlan | undefined>();
  for (const name of events.names) {
    writers.set(name, compileJsonWriter(events.schemas[name]!));
    plans.set(name, readerPlan(events.schemas[name]!));
  }
  const transport = await factory(parsed.transport as Record<string, unknown>, {
    service: parsed.service,
    logger,
    eventTypes: events.names,
    serializer: (type) => serializers.get(type) ?? jsonStringify,
    jsonWriter: (type) => writers.get(type),
    readerPlan: (type) => plans.get(type),
  });
  await transport.connect();
  try {
    return new EventBus(parsed.service, events, transport, parsed, logger, serializers);
  } catch (err) {
    await transport.close();
    throw err;
  }
}
