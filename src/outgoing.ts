/**
 * Events on their way out as the bus builds them (the `OutgoingEvent` of src/transport.ts), and the
 * writing of their ids as bytes.
 *
 * An event is small on purpose: a batched event costs little besides its payload, so the bytes of its
 * object are a large part of what publishing allocates and the young-generation GC copies while a batch
 * is in flight. What the events of one publish call share (type, time, options) is one `EventMeta`, and
 * the id is kept as its generator made it, a shared 24-character head and the index of a two-character
 * tail: the id string is built only when something asks for it, and `writeIdBytes` writes ids without it.
 */
import { ID_HEAD_LENGTH, idHeadAt, idTail, type EventHeaders, type PublishOptions } from './envelope.js';
import type { EventRun, OutgoingEvent, RunBytes } from './transport.js';
import { VERSION_HEADER } from './versions.js';

/** What the events of one publish call share. */
export class EventMeta {
  declare readonly type: string;
  declare readonly time: number;
  declare readonly correlationId: string | undefined;
  declare readonly causationId: string | undefined;
  declare readonly headers: EventHeaders | undefined;
  /** `version`: the type's latest version as the header's string, for a versioned type (src/versions.ts); else undefined. */
  constructor(type: string, time: number, options: Omit<PublishOptions, 'key'> | undefined, version?: string) {
    const self = this as { -readonly [K in keyof EventMeta]: EventMeta[K] };
    self.type = type;
    self.time = time;
    self.correlationId = options?.correlationId;
    self.causationId = options?.causationId;
    // A copy: a caller reusing one headers object for its next publish must not change this event's. The version
    // header is the publisher's: its schema's version, or none for a plain type, whatever the caller's headers
    // say (a handler forwarding `event.headers` passes on the version of the event it received).
    const headers = options?.headers;
    if (version !== undefined) self.headers = { ...headers, [VERSION_HEADER]: version };
    else if (headers === undefined) self.headers = undefined;
    else {
      const copy = { ...headers };
      delete copy[VERSION_HEADER];
      self.headers = copy;
    }
  }
}

/** What the events of a publish call read from their shared `EventMeta`. */
abstract class WithMeta {
  declare readonly meta: EventMeta;
  get type(): string {
    return this.meta.type;
  }
  get time(): number {
    return this.meta.time;
  }
  get correlationId(): string | undefined {
    return this.meta.correlationId;
  }
  get causationId(): string | undefined {
    return this.meta.causationId;
  }
  get headers(): EventHeaders | undefined {
    return this.meta.headers;
  }
}

/**
 * An event on its way to the transport. Built by a constructor rather than an object literal: V8 tracks
 * literal allocation sites and, after a phase where many events outlive a young-generation GC (10,000
 * publishers awaiting at once), may pretenure them, so every later event lands in the old generation;
 * instances of a class are not pretenured that way. Fields are assigned, not declared, so the
 * constructor does plain stores in one fixed order.
 */
export class Outgoing extends WithMeta implements OutgoingEvent {
  /** The id is `idHead + idTail(idLow)` (see `IdGenerator.step`). */
  declare readonly idHead: string;
  declare readonly idLow: number;
  declare readonly key: string | undefined;
  declare readonly data: unknown;
  declare readonly json: string | undefined;
  declare readonly partition: number;
  constructor(meta: EventMeta, idHead: string, idLow: number, key: string | undefined, data: unknown, json: string | undefined, partition: number) {
    super();
    const self = this as { -readonly [K in keyof Outgoing]: Outgoing[K] };
    self.meta = meta;
    self.idHead = idHead;
    self.idLow = idLow;
    self.key = key;
    self.data = data;
    self.json = json;
    self.partition = partition;
  }
  get id(): string {
    return this.idHead + idTail(this.idLow);
  }
}

/**
 * Events `values[0..count)` of a publishMany call queued as one run (`EventRun`): the ids are consecutive
 * sequence numbers under one prefix, so a run keeps no object per event. A run of `bytes` keeps the payloads
 * only as the JSON the bus wrote at publish, and decodes `values` from it if they are asked for.
 */
export class Run extends WithMeta implements EventRun {
  declare readonly key: string | undefined;
  declare readonly partition: number;
  declare readonly idPrefix: string;
  declare readonly firstSeq: number;
  declare private decoded: readonly unknown[] | undefined;
  declare readonly jsons: readonly (string | undefined)[] | undefined;
  declare readonly bytes: RunBytes | undefined;
  constructor(
    meta: EventMeta,
    key: string | undefined,
    partition: number,
    idPrefix: string,
    firstSeq: number,
    values: readonly unknown[] | undefined,
    jsons: readonly (string | undefined)[] | undefined,
    bytes: RunBytes | undefined,
  ) {
    super();
    const self = this as unknown as { -readonly [K in 'meta' | 'key' | 'partition' | 'idPrefix' | 'firstSeq' | 'decoded' | 'jsons' | 'bytes']: unknown };
    self.meta = meta;
    self.key = key;
    self.partition = partition;
    self.idPrefix = idPrefix;
    self.firstSeq = firstSeq;
    self.decoded = values;
    self.jsons = jsons;
    self.bytes = bytes;
  }
  get count(): number {
    return this.bytes !== undefined ? this.bytes.ends.length : this.decoded!.length;
  }
  get values(): readonly unknown[] {
    return (this.decoded ??= payloadsOf(this.bytes!));
  }
  id(i: number): string {
    const s = this.firstSeq + i;
    return idHeadAt(this.idPrefix, s) + idTail(s & 1023);
  }
  /** Events `from..to` as a run of their own (their ids unchanged). */
  slice(from: number, to: number): Run {
    const b = this.bytes;
    const bytes = b === undefined ? undefined : { buffer: b.buffer, start: from === 0 ? b.start : b.ends[from - 1]!, ends: b.ends.subarray(from, to), room: b.room };
    return new Run(this.meta, this.key, this.partition, this.idPrefix, this.firstSeq + from, this.decoded?.slice(from, to), this.jsons?.slice(from, to), bytes);
  }
  events(): OutgoingEvent[] {
    const n = this.count;
    const values = this.values;
    const out: OutgoingEvent[] = new Array(n);
    let head = '';
    for (let i = 0; i < n; i++) {
      const s = this.firstSeq + i;
      head = runIdHead(this.idPrefix, s, i, head);
      out[i] = new Outgoing(this.meta, head, s & 1023, this.key, values[i], this.jsons?.[i], this.partition);
    }
    return out;
  }
}

/** The payloads of a run's bytes, decoded (they are JSON of printable ASCII). */
function payloadsOf(b: RunBytes): unknown[] {
  const out: unknown[] = new Array(b.ends.length);
  for (let i = 0, s = b.start; i < out.length; s = b.ends[i]!, i++) out[i] = JSON.parse(b.buffer.toString('latin1', s + b.room, b.ends[i]!));
  return out;
}

/**
 * An event and a run (with their metas) as the publish path builds them: the same constructors, with values of
 * the same representations, so they share the maps of the events published. For `keepShapes` (src/v8-shapes.ts).
 */
export function shapeSamples(): object[] {
  return [
    new Outgoing(new EventMeta('', Date.now(), undefined, undefined), '', 0, undefined, {}, undefined, 0),
    new Run(new EventMeta('', Date.now(), undefined, undefined), undefined, 0, '', 0, [{}], undefined, undefined),
  ];
}

/** Width of the ids `writeIdBytes` writes. */
export const ID_BYTES = ID_HEAD_LENGTH + 2;

/** The last head written, as six 32-bit words of its bytes (copied four bytes at a time). */
let lastHead = '';
let w0 = 0;
let w1 = 0;
let w2 = 0;
let w3 = 0;
let w4 = 0;
let w5 = 0;
const headBytes = new Uint8Array(ID_HEAD_LENGTH);
const headView = new DataView(headBytes.buffer);
/** `idTail(low)` as two bytes at `2 * low`. */
export const TAIL_BYTES = new Uint8Array(2048);
for (let low = 0; low < 1024; low++) {
  const t = idTail(low);
  TAIL_BYTES[2 * low] = t.charCodeAt(0);
  TAIL_BYTES[2 * low + 1] = t.charCodeAt(1);
}

/** Loads `head` as the current head words; false when it is not ASCII of the head's width. */
function loadHead(head: string): boolean {
  lastHead = '';
  if (head.length !== ID_HEAD_LENGTH) return false;
  for (let k = 0; k < ID_HEAD_LENGTH; k++) {
    const c = head.charCodeAt(k);
    if (c > 0x7f) return false;
    headBytes[k] = c;
  }
  // Byte order is irrelevant: read here and written in `writeId` alike.
  w0 = headView.getUint32(0);
  w1 = headView.getUint32(4);
  w2 = headView.getUint32(8);
  w3 = headView.getUint32(12);
  w4 = headView.getUint32(16);
  w5 = headView.getUint32(20);
  lastHead = head;
  return true;
}

/**
 * Writes the id of `ev` at `o` as `ID_BYTES` ASCII bytes (`view` is a DataView of `out`, which must have
 * the room), a bus event's without building its string. False when the id is not `ID_BYTES` ASCII
 * characters (the bytes written are then meaningless: write it as text).
 */
export function writeId(ev: OutgoingEvent, out: Uint8Array, view: DataView, o: number): boolean {
  if (ev instanceof Outgoing) return writeHeadId(ev.idHead, ev.idLow, out, view, o);
  const id = ev.id;
  if (id.length !== ID_BYTES) return false;
  for (let k = 0; k < ID_BYTES; k++) {
    const c = id.charCodeAt(k);
    if (c > 0x7f) return false;
    out[o + k] = c;
  }
  return true;
}

/**
 * Writes the id `head + idTail(low)` at `o` as `ID_BYTES` ASCII bytes (see `writeId`); false when `head` is
 * not ASCII of the head's width. Fastest when one head string object is passed for consecutive ids.
 */
export function writeHeadId(head: string, low: number, out: Uint8Array, view: DataView, o: number): boolean {
  if (head !== lastHead && !loadHead(head)) return false;
  view.setUint32(o, w0);
  view.setUint32(o + 4, w1);
  view.setUint32(o + 8, w2);
  view.setUint32(o + 12, w3);
  view.setUint32(o + 16, w4);
  view.setUint32(o + 20, w5);
  const t = 2 * low;
  out[o + 24] = TAIL_BYTES[t]!;
  out[o + 25] = TAIL_BYTES[t + 1]!;
  return true;
}

/**
 * Writes the ids of `events` back to back into `out` from `at` (`writeId` each). False when some id is not
 * `ID_BYTES` ASCII characters (write the ids as text). `out` needs room for all of them.
 */
export function writeIdBytes(events: readonly OutgoingEvent[], out: Uint8Array, at: number): boolean {
  const view = new DataView(out.buffer, out.byteOffset, out.byteLength);
  for (let i = 0, o = at; i < events.length; i++, o += ID_BYTES) if (!writeId(events[i]!, out, view, o)) return false;
  return true;
}

/**
 * The head of id `s`, the `i`-th of a run under `prefix`, for loops over a run's ids: `head` (the one before)
 * while `s` stays in its block of 1024, one string per block, so `writeHeadId` sees the same head object.
 */
export function runIdHead(prefix: string, s: number, i: number, head: string): string {
  return i === 0 || (s & 1023) === 0 ? idHeadAt(prefix, s) : head;
}

/** `writeIdBytes` for the ids of a run (`EventRun`), without building them. */
export function writeRunIdBytes(run: EventRun, out: Uint8Array, at: number): boolean {
  const view = new DataView(out.buffer, out.byteOffset, out.byteLength);
  const { firstSeq, idPrefix } = run;
  let head = '';
  for (let i = 0, o = at; i < run.count; i++, o += ID_BYTES) {
    const s = firstSeq + i;
    head = runIdHead(idPrefix, s, i, head);
    if (!writeHeadId(head, s & 1023, out, view, o)) return false;
  }
  return true;
}
