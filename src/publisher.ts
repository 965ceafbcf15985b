/**
 * The publish side of a bus: turns a payload into an outgoing event and queues it on the batcher. `parse`
 * validates, encodes where the type's plan says so and checks the size; `make` gives the event its id and
 * partition; `enqueue` does both for a single `publish`. The bulk path (src/bulk-publish.ts) uses the same
 * steps and keeps its state here too: the calls still queueing (which `close` waits for) and a spare byte
 * buffer. `closed` refuses publishes once `close` has drained the subscriptions.
 */
import type { Batcher } from './batcher.js';
import type { ResolvedBatching } from './config.js';
import { IdGenerator, type PublishOptions } from './envelope.js';
import { PayloadTooLargeError } from './errors.js';
import { EventMeta, Outgoing } from './outgoing.js';
import { partitionForKey } from './partition.js';
import { BOUND_PER_ESTIMATE } from './serializer.js';
import type { OutgoingEvent, TransportCapabilities } from './transport.js';
import { encodeJson, validated, type TypeState } from './type-plans.js';

export class Publisher {
  readonly ids = new IdGenerator();
  /** publishMany calls still queueing slices. */
  readonly bulkCalls = new Set<Promise<void>>();
  /**
   * Set by close() once the subscriptions have drained: publishes are refused from then on. Until then the
   * handlers close() drains may still publish (the next step of their work), and those events are sent.
   */
  closed: boolean;
  readonly maxEventBytes: number;
  /** The transport takes a publishMany call's events of one lane as runs (`TransportCapabilities.input` `runs` or `runBytes`). */
  readonly runs: boolean;
  /** Bytes of room before each payload a transport taking runs as bytes wants (`input` `runBytes`); else -1. */
  readonly room: number;
  /** A settled call's byte buffer, for the next call written as bytes (`keepSpare` in src/bulk-publish.ts). */
  spare: Buffer | undefined = undefined;
  /** Set by `parse`: the encoded payload of the value it returned (undefined when not encoded). */
  parsedJson: string | undefined = undefined;
  /** Set by `parse`: what the event counts toward `batching.maxBytes` (JSON length, or the schema's estimate). */
  parsedSize = 0;

  constructor(
    readonly batcher: Batcher,
    readonly batching: ResolvedBatching,
    caps: TransportCapabilities,
  ) {
    this.closed = false;
    this.maxEventBytes = caps.maxEventBytes;
    const input = caps.input;
    this.runs = input !== undefined && input.kind !== 'events';
    this.room = input !== undefined && input.kind === 'runBytes' ? input.room : -1;
  }

  enqueue(t: TypeState, data: unknown, options: PublishOptions | undefined, key: string | undefined, extra: number): Promise<void> {
    const value = this.parse(t, data, -1, extra);
    const ev = this.make(t, value, this.parsedJson, this.metaOf(t, options), key);
    return this.batcher.add(t.lanes[ev.partition]!, ev, this.parsedSize);
  }

  /** What a single publish shares: per call with options, else one per type while the clock stays on a millisecond. */
  metaOf(t: TypeState, options: Omit<PublishOptions, 'key'> | undefined): EventMeta {
    const now = Date.now();
    if (options !== undefined) return new EventMeta(t.name, now, options, t.version);
    let meta = t.meta;
    if (meta.time !== now) meta = t.meta = new EventMeta(t.name, now, undefined, t.version);
    return meta;
  }

  /**
   * Validates (and, where needed, encodes and size-checks) one payload; throws a typed error. `extra`: the
   * bytes of the event's publish options (key, ids, headers), which count toward `maxEventBytes` with it.
   */
  parse(t: TypeState, data: unknown, index: number, extra: number): unknown {
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

  /** The event, routed over `partitions` (the type's count; a publishMany call's own, taken when it began). */
  make(t: TypeState, value: unknown, json: string | undefined, meta: EventMeta, key: string | undefined, partitions = t.partitions): OutgoingEvent {
    let partition = 0;
    if (partitions > 1) {
      if (key !== undefined) partition = partitionForKey(key, partitions);
      else partition = t.rr++ % partitions;
    }
    const low = this.ids.step(meta.time);
    return new Outgoing(meta, this.ids.head, low, key, value, json, partition);
  }
}
