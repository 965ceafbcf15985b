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
import { ID_HEAD_LENGTH, idTail, type EventHeaders, type PublishOptions } from './envelope.js';
import type { OutgoingEvent } from './transport.js';

/** What the events of one publish call share. */
export class EventMeta {
  declare readonly type: string;
  declare readonly time: number;
  declare readonly correlationId: string | undefined;
  declare readonly causationId: string | undefined;
  declare readonly headers: EventHeaders | undefined;
  constructor(type: string, time: number, options: Omit<PublishOptions, 'key'> | undefined) {
    const self = this as { -readonly [K in keyof EventMeta]: EventMeta[K] };
    self.type = type;
    self.time = time;
    self.correlationId = options?.correlationId;
    self.causationId = options?.causationId;
    self.headers = options?.headers;
  }
}

/**
 * An event on its way to the transport. Built by a constructor rather than an object literal: V8 tracks
 * literal allocation sites and, after a phase where many events outlive a young-generation GC (10,000
 * publishers awaiting at once), may pretenure them, so every later event lands in the old generation.
 * Measured with 10 interleaved runs each of 10,000 concurrent publishers into noop: literal 2.86M/s mean
 * (1.90M..4.05M), constructor 3.52M/s (2.41M..4.09M). Fields are assigned, not declared, so the
 * constructor does plain stores in one fixed order.
 */
export class Outgoing implements OutgoingEvent {
  declare readonly meta: EventMeta;
  /** The id is `idHead + idTail(idLow)` (see `IdGenerator.step`). */
  declare readonly idHead: string;
  declare readonly idLow: number;
  declare readonly key: string | undefined;
  declare readonly data: unknown;
  declare readonly json: string | undefined;
  declare readonly partition: number;
  constructor(meta: EventMeta, idHead: string, idLow: number, key: string | undefined, data: unknown, json: string | undefined, partition: number) {
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

/** Width of the ids `writeIdBytes` writes. */
export const ID_BYTES = ID_HEAD_LENGTH + 2;

/** The last head written by `writeIdBytes`, as bytes (and as six words, copied four bytes at a time). */
let lastHead = '';
const headBytes = new Uint8Array(ID_HEAD_LENGTH);
const headView = new DataView(headBytes.buffer);
/** `idTail(low)` as two bytes at `2 * low`. */
const TAIL_BYTES = new Uint8Array(2048);
for (let low = 0; low < 1024; low++) {
  const t = idTail(low);
  TAIL_BYTES[2 * low] = t.charCodeAt(0);
  TAIL_BYTES[2 * low + 1] = t.charCodeAt(1);
}

/** Loads `head` into `headBytes`; false when it is not ASCII of the head's width. */
function loadHead(head: string): boolean {
  lastHead = '';
  if (head.length !== ID_HEAD_LENGTH) return false;
  for (let k = 0; k < ID_HEAD_LENGTH; k++) {
    const c = head.charCodeAt(k);
    if (c > 0x7f) return false;
    headBytes[k] = c;
  }
  lastHead = head;
  return true;
}

/**
 * Writes the ids of `events` back to back into `out` from `at`, `ID_BYTES` ASCII bytes each, the bus's
 * events without building their id strings. Returns false when some id is not `ID_BYTES` ASCII characters
 * (the bytes written are then meaningless: write the ids as text). `out` needs room for all of them.
 */
export function writeIdBytes(events: readonly OutgoingEvent[], out: Uint8Array, at: number): boolean {
  const n = events.length;
  const view = new DataView(out.buffer, out.byteOffset, out.byteLength);
  const hv = headView;
  for (let i = 0, o = at; i < n; i++, o += ID_BYTES) {
    const ev = events[i]!;
    if (ev instanceof Outgoing) {
      if (ev.idHead !== lastHead && !loadHead(ev.idHead)) return false;
      // 24 head bytes as 6 x 4 (byte order is irrelevant: read and written alike), then the tail.
      view.setUint32(o, hv.getUint32(0));
      view.setUint32(o + 4, hv.getUint32(4));
      view.setUint32(o + 8, hv.getUint32(8));
      view.setUint32(o + 12, hv.getUint32(12));
      view.setUint32(o + 16, hv.getUint32(16));
      view.setUint32(o + 20, hv.getUint32(20));
      const t = 2 * ev.idLow;
      out[o + 24] = TAIL_BYTES[t]!;
      out[o + 25] = TAIL_BYTES[t + 1]!;
      continue;
    }
    const id = ev.id;
    if (id.length !== ID_BYTES) return false;
    for (let k = 0; k < ID_BYTES; k++) {
      const c = id.charCodeAt(k);
      if (c > 0x7f) return false;
      out[o + k] = c;
    }
  }
  return true;
}
