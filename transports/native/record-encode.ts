/**
 * Writing the records of the native transport (format in record.ts): a unit's events, or a run's columns,
 * as one batch of records in reused scratch memory. Plain records (fixed header and payload, the payload
 * written by the type's compiled JSON writer) are written as bytes; the others as text, with one
 * `utf8Write` for the lot where there is no compiled writer.
 */
import type { EventRun, OutgoingEvent, RunBytes } from '../../src/transport.js';
import { idHeadAt, idTail } from '../../src/envelope.js';
import { runIdHead, TAIL_BYTES, writeHeadId, writeId } from '../../src/outgoing.js';
import { NEEDS_STRING, NO_ROOM, type DirectBuffer, type JsonWriter } from '../../src/json-writer.js';
import { HEADER as RECORD_HEADER, ID_LEN as RECORD_ID_LEN, plainFlag, type EncodedBatch, type Extras } from './record.js';

// The format's sizes as this module's own constants, as the per-record code reads them.
const ID_LEN = RECORD_ID_LEN;
const HEADER = RECORD_HEADER;

const NO_ID = ' '.repeat(ID_LEN);
/** A flag (record.ts) as its one-character string. */
const FLAG_TEXT: string[] = Array.from({ length: 128 }, (_, c) => String.fromCharCode(c));
let scratch = Buffer.allocUnsafeSlow(1 << 20) as DirectBuffer;
/** `scratch` as a DataView: headers are copied four bytes at a time. */
let scratchView = viewOf(scratch);

function viewOf(b: Buffer): DataView {
  return new DataView(b.buffer, b.byteOffset, b.byteLength);
}

function setScratch(b: Buffer): void {
  scratch = b as DirectBuffer;
  scratchView = viewOf(b);
}
let lensBuf = new Uint32Array(4096);
let charsBuf = new Uint32Array(4096);

/** Grows the reused length arrays to hold `n` records. */
function roomForLengths(n: number): void {
  if (lensBuf.length < n) {
    lensBuf = new Uint32Array(Math.max(n, lensBuf.length * 2));
    charsBuf = new Uint32Array(lensBuf.length);
  }
}

/**
 * Encodes a unit's events as records. With the type's compiled JSON writer (`writer`), records are written
 * as bytes straight into the scratch memory; events it declines (text to escape or not ASCII, extras) are
 * encoded as strings. Without one, every record is a string and all are written with one `utf8Write`.
 */
export function encodeEvents(
  events: readonly OutgoingEvent[],
  serialize: (data: unknown) => string = JSON.stringify,
  writer?: JsonWriter,
  /** The publishing service, written into every record; undefined for the broker's own. */
  source?: string,
): EncodedBatch {
  const n = events.length;
  roomForLengths(n);
  if (writer !== undefined && source === undefined) return writeRecords(events, serialize, writer);
  const lens = lensBuf;
  const chars = charsBuf;
  // All records as one string, written with one utf8Write: a native call per record costs more than
  // the record. When every byte is ASCII (written bytes = chars) the byte lengths are the char lengths.
  let all = '';
  for (let i = 0; i < n; i++) {
    const ev = events[i]!;
    const json = ev.json ?? serialize(ev.data);
    const rec = encodeEvent(ev, json, source);
    chars[i] = rec.length;
    all += rec;
  }
  // Room for the text as ASCII (the common case) and one write; no separate byte-length pass. A write
  // that (nearly) fills the scratch may have stopped early (multi-byte text): then measure and redo.
  if (scratch.length < all.length + 4) setScratch(Buffer.allocUnsafeSlow(Math.max(scratch.length * 2, all.length + 4)));
  let written = scratch.utf8Write(all, 0);
  if (written + 4 > scratch.length) {
    const size = Buffer.byteLength(all);
    if (size > written) {
      setScratch(Buffer.allocUnsafeSlow(Math.max(scratch.length * 2, size + 4)));
      written = scratch.utf8Write(all, 0);
    }
  }
  if (written === all.length) {
    lens.set(chars.subarray(0, n));
  } else {
    // Some record holds multi-byte characters: byte lengths record by record.
    for (let i = 0, c = 0; i < n; i++) {
      lens[i] = Buffer.byteLength(all.slice(c, c + chars[i]!));
      c += chars[i]!;
    }
  }
  return { bytes: scratch.subarray(0, written), lens, chars, n };
}

let lastTime = -1;
let lastTimeText = '';
/** `lastTimeText` as bytes (when it is not ''), followed by the '0' flag. */
const lastTimeBytes = new Uint8Array(16);
lastTimeBytes[13] = 0x30;
const lastTimeWords = new DataView(lastTimeBytes.buffer);

/** A publish time's 13 digits for the fixed header, or '' when it does not fit there (cached: a unit's events mostly share one). */
function timeText(t: number): string {
  if (t !== lastTime) {
    lastTime = t;
    lastTimeText = Number.isInteger(t) && t >= 1e12 && t < 1e13 ? String(t) : '';
    for (let k = 0; k < lastTimeText.length; k++) lastTimeBytes[k] = lastTimeText.charCodeAt(k);
  }
  return lastTimeText;
}

/** Grows the scratch memory to hold `need` bytes, keeping its first `keep` bytes. */
function growScratch(need: number, keep: number): void {
  const next = Buffer.allocUnsafeSlow(Math.max(scratch.length * 2, need)) as DirectBuffer;
  scratch.copy(next, 0, 0, keep);
  setScratch(next);
}

/** Writes `rec` (any text) at `o`, growing the scratch memory as needed; returns the bytes written. */
function writeText(rec: string, o: number): number {
  if (o + rec.length * 3 > scratch.length) {
    const bytes = Buffer.byteLength(rec);
    if (o + bytes > scratch.length) growScratch(o + bytes + 65_536, o);
  }
  return scratch.utf8Write(rec, o);
}

/** Writes record `i` as text at `start` (`writeText`) and notes its lengths; returns the offset after it. */
function textRecord(rec: string, start: number, i: number): number {
  const bytes = writeText(rec, start);
  lensBuf[i] = bytes;
  charsBuf[i] = rec.length;
  return start + bytes;
}

/** `encodeEvents` with a compiled JSON writer: plain records as bytes, the others as text. */
function writeRecords(events: readonly OutgoingEvent[], serialize: (data: unknown) => string, writer: JsonWriter): EncodedBatch {
  const n = events.length;
  const lens = lensBuf;
  const chars = charsBuf;
  let o = 0;
  for (let i = 0; i < n; i++) {
    const ev = events[i]!;
    const start = o;
    // The fixed header and the payload as bytes; extras, an unusual id or time, or an encoded payload take the text path.
    const flag = ev.json === undefined ? plainExtras(ev) : -1;
    const end = flag >= 0 ? plainRecord(ev, '', 0, ev.data, writer, start, flag) : NEEDS_STRING;
    o = end >= 0 ? bytesRecord(i, start, end) : textRecord(encodeEvent(ev, ev.json ?? serialize(ev.data)), start, i);
  }
  return { bytes: scratch.subarray(0, o), lens, chars, n };
}

/**
 * A record of the fixed header and the payload written by `writer`, as bytes at `start`: of `ev`, or (`ev`
 * undefined) of the run event whose id is `head + idTail(low)`, with the time of the last `timeText` and `flag`
 * (record.ts). Grows the scratch memory as needed. Returns the end, or NEEDS_STRING when the id or the payload
 * must be written as text.
 */
function plainRecord(ev: OutgoingEvent | undefined, head: string, low: number, data: unknown, writer: JsonWriter, start: number, flag: number): number {
  for (;;) {
    let end: number = NO_ROOM;
    if (start + HEADER <= scratch.length) {
      const id = ev !== undefined ? writeId(ev, scratch, scratchView, start) : writeHeadId(head, low, scratch, scratchView, start);
      end = id ? writer(data, scratch, writeFlag(scratch, writeTime(scratchView, start + ID_LEN), flag)) : NEEDS_STRING;
    }
    if (end !== NO_ROOM) return end;
    growScratch(scratch.length * 2, start);
  }
}

/** Notes the lengths of record `i`, written as bytes from `start` to `end`; returns `end`. */
function bytesRecord(i: number, start: number, end: number): number {
  lensBuf[i] = charsBuf[i] = end - start; // ASCII: bytes = UTF-16 units
  return end;
}

/**
 * `encodeEvents` for a run (`PublishUnit.run`): the same records, written from the run's columns. A run
 * with extras (key, options, a source) or no compiled writer goes through its events.
 */
export function encodeRun(run: EventRun, serialize: (data: unknown) => string, writer?: JsonWriter, source?: string): EncodedBatch {
  const flag = source === undefined ? plainRun(run) : -1;
  const plain = flag >= 0;
  const b = run.bytes;
  if (plain && b !== undefined && b.room === HEADER) {
    const batch = headRecords(run, b, flag);
    if (batch !== undefined) return batch;
  }
  if (writer === undefined || !plain) return encodeEvents(run.events(), serialize, writer, source);
  const n = run.count;
  roomForLengths(n);
  const lens = lensBuf;
  const chars = charsBuf;
  const { values, jsons, idPrefix, firstSeq } = run;
  let head = '';
  let o = 0;
  for (let i = 0; i < n; i++) {
    const s = firstSeq + i;
    const low = s & 1023;
    head = runIdHead(idPrefix, s, i, head);
    const start = o;
    const end = jsons === undefined || jsons[i] === undefined ? plainRecord(undefined, head, low, values[i], writer, start, flag) : NEEDS_STRING;
    // Else text (a payload encoded at publish, or one the writer declined).
    o = end >= 0 ? bytesRecord(i, start, end) : textRecord(head + idTail(low) + lastTimeText + FLAG_TEXT[flag]! + (jsons?.[i] ?? serialize(values[i])), start, i);
  }
  return { bytes: scratch.subarray(0, o), lens, chars, n };
}

/** The fixed header of the records of one block of 1024 ids (`headRecords`), the id's last two bytes aside. */
const template = new DataView(new ArrayBuffer(HEADER));
const templateBytes = new Uint8Array(template.buffer);

/**
 * The records of a run written as bytes at publish (`EventRun.bytes`), where they are: the fixed header (as
 * `plainRecord` writes it) is written into the room before each payload. Undefined when an id is not ASCII of
 * the header's width (then the records are written again from the run's values). Needs `plainRun(run)` (it
 * leaves the time current), and `flag` is its answer.
 *
 * Per block of 1024 ids the header is made once in `template` and held as ten 32-bit words; each record then
 * takes the ten words and its id's last two bytes (little-endian words: the byte order of the machines Node
 * runs on, so the stores need no byte swap).
 */
function headRecords(run: EventRun, b: RunBytes, flag: number): EncodedBatch | undefined {
  const n = run.count;
  roomForLengths(n);
  const lens = lensBuf;
  const chars = charsBuf;
  const { buffer, ends } = b;
  const view = viewOf(buffer);
  const { idPrefix, firstSeq } = run;
  writeFlag(templateBytes, writeTime(template, ID_LEN), flag);
  let w0 = 0, w1 = 0, w2 = 0, w3 = 0, w4 = 0, w5 = 0, w6 = 0, w7 = 0, w8 = 0, w9 = 0; // prettier-ignore
  let start = b.start;
  for (let i = 0; i < n; i++) {
    const s = firstSeq + i;
    const low = s & 1023;
    if (i === 0 || low === 0) {
      if (!writeHeadId(idHeadAt(idPrefix, s), 0, templateBytes, template, 0)) return undefined;
      w0 = template.getUint32(0, true);
      w1 = template.getUint32(4, true);
      w2 = template.getUint32(8, true);
      w3 = template.getUint32(12, true);
      w4 = template.getUint32(16, true);
      w5 = template.getUint32(20, true);
      w6 = template.getUint32(24, true); // bytes 24-25 are the id's last two, written per record
      w7 = template.getUint32(28, true);
      w8 = template.getUint32(32, true);
      w9 = template.getUint32(36, true);
    }
    view.setUint32(start, w0, true);
    view.setUint32(start + 4, w1, true);
    view.setUint32(start + 8, w2, true);
    view.setUint32(start + 12, w3, true);
    view.setUint32(start + 16, w4, true);
    view.setUint32(start + 20, w5, true);
    view.setUint32(start + 24, w6, true);
    view.setUint32(start + 28, w7, true);
    view.setUint32(start + 32, w8, true);
    view.setUint32(start + 36, w9, true);
    buffer[start + 24] = TAIL_BYTES[2 * low]!;
    buffer[start + 25] = TAIL_BYTES[2 * low + 1]!;
    const end = ends[i]!;
    lens[i] = chars[i] = end - start; // ASCII: bytes = UTF-16 units
    start = end;
  }
  return { bytes: buffer.subarray(b.start, start), lens, chars, n };
}

/** The flag of a run whose records are the fixed header and the payload alone (`plainHeader` for each event), else -1; leaves `timeText` current. */
function plainRun(run: EventRun): number {
  const plain = timeText(run.time) !== '' && run.key === undefined && run.correlationId === undefined && run.causationId === undefined && run.idPrefix.length === ID_LEN - 10;
  return plain ? plainFlag(run.headers) : -1;
}

/** Writes `flag` into `bytes` over the '0' flag `writeTime` wrote just before `o`; returns `o`. */
function writeFlag(bytes: Uint8Array, o: number, flag: number): number {
  if (flag !== 0x30) bytes[o - 1] = flag;
  return o;
}

/** The 13 time digits of the last `timeText` and the '0' flag, at `o` of the memory of `d`. */
function writeTime(d: DataView, o: number): number {
  d.setUint32(o, lastTimeWords.getUint32(0));
  d.setUint32(o + 4, lastTimeWords.getUint32(4));
  d.setUint32(o + 8, lastTimeWords.getUint32(8));
  d.setUint16(o + 12, lastTimeWords.getUint16(12)); // the last digit and the flag '0'
  return o + 14;
}

/**
 * The flag (record.ts) of the event's record when it is the fixed header and the payload alone: an id of the
 * usual width, a time of 13 digits (`timeText`, which this leaves current for the header writers) and no extras
 * (headers of a version the flag holds at most); else -1.
 */
function plainHeader(ev: OutgoingEvent): number {
  return ev.id.length === ID_LEN ? plainExtras(ev) : -1;
}

/** `plainHeader` for an event whose id is known to have the usual width. */
function plainExtras(ev: OutgoingEvent): number {
  const plain = timeText(ev.time) !== '' && ev.key === undefined && ev.correlationId === undefined && ev.causationId === undefined;
  return plain ? plainFlag(ev.headers) : -1;
}

/** The record of an event as text: the fixed header, then extras (key, ids, headers, an unusual id/time) if any. */
function encodeEvent(ev: OutgoingEvent, json: string, source?: string): string {
  const time = timeText(ev.time);
  const flag = source === undefined ? plainHeader(ev) : -1;
  if (flag >= 0) return ev.id + time + FLAG_TEXT[flag]! + json;
  const plainId = ev.id.length === ID_LEN;
  const x: Extras = { k: ev.key, c: ev.correlationId, x: ev.causationId, h: ev.headers, s: source };
  if (!plainId) x.i = ev.id;
  if (time === '') x.t = ev.time;
  return (plainId ? ev.id : NO_ID) + (time !== '' ? time : '0000000000000') + '1' + JSON.stringify(x) + '\n' + json;
}
