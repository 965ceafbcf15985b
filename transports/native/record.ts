/**
 * The record format of the native transport. A record is a fixed header and the bus's payload JSON, reused:
 *
 *   <id: 26 chars><time: 13 digits><flag>[<extras JSON>\n]<payload JSON>
 *
 * `flag` is '0', or '1' when an extras object (key, correlation/causation ids, headers, a source other than the
 * broker's) follows; JSON never contains a raw newline, so '\n' ends it. A record with no extras whose payload is of
 * a version 2..`MAX_FLAG_VERSION` of its type's schema (src/versions.ts) has the flag `'@' + version` ('B' for 2,
 * 'z' for 58): the version rides in the fixed header, and the record keeps the plain records' paths. A later
 * version travels as the `eventlane-version` header in the extras. Records are split with the offsets the
 * core returns from `pop`, so framing is read without parsing. Writing records is record-encode.ts's, reading
 * them record-decode.ts's; this module holds what both agree on, and the batch the core is given.
 */
import type { EventHeaders } from '../../src/envelope.js';
import { ID_BYTES } from '../../src/outgoing.js';
import { VERSION_HEADER } from '../../src/versions.js';

/**
 * A batch of records ready for `PartitionCore.push`: UTF-8 bytes back to back, with each record's byte and
 * UTF-16 lengths. `encodeEvents` returns views of reused scratch memory (`encodeRun` of a run's bytes: of
 * those bytes and the reused length arrays), valid until the next call; `copyBatch` makes one that can be kept.
 */
export interface EncodedBatch {
  bytes: Uint8Array;
  lens: Uint32Array;
  chars: Uint32Array;
  n: number;
}

/** The extras object of a record whose flag is '1'. */
export interface Extras {
  k?: string;
  c?: string;
  x?: string;
  h?: EventHeaders;
  /** id or time that does not fit the fixed header */
  i?: string;
  /** the publishing bus's service, when it is not the one that opened the broker */
  s?: string;
  t?: number;
}

/** Characters of the header's id: the header holds a bus id as it is. */
export const ID_LEN = ID_BYTES;
/** Characters of the fixed header: id, 13 time digits, flag. */
export const HEADER = ID_LEN + 13 + 1;
/** Bytes of a plain record before its payload (id, time, flag): the room asked for runs written as bytes (`input` `runBytes`). */
export const RECORD_HEADER_BYTES = HEADER;

/** A copy of records `from..n` of a batch that outlives the scratch memory. */
export function copyBatch(b: EncodedBatch, from = 0): EncodedBatch {
  let skip = 0;
  for (let i = 0; i < from; i++) skip += b.lens[i]!;
  return { bytes: Uint8Array.prototype.slice.call(b.bytes, skip), lens: b.lens.slice(from, b.n), chars: b.chars.slice(from, b.n), n: b.n - from };
}

/** The flag of a plain record ('0'), and of one followed by extras ('1'). */
export const FLAG_PLAIN = 0x30;
export const FLAG_EXTRAS = 0x31;
/** The latest version a flag holds (`'@' + version`, up to 'z'). */
export const MAX_FLAG_VERSION = 0x7a - 0x40;

/** The last headers `plainFlag` was given and its answer (the events of a publish call share one headers object). */
let lastHeaders: EventHeaders | undefined;
let lastFlag = FLAG_PLAIN;

/**
 * The flag of a record without extras for an event of `headers`: `FLAG_PLAIN` for none, the version's flag for
 * headers that hold only a version the flag can hold; -1 when the headers must go in the extras.
 */
export function plainFlag(headers: EventHeaders | undefined): number {
  if (headers === undefined) return FLAG_PLAIN;
  if (headers !== lastHeaders) {
    lastHeaders = headers;
    lastFlag = versionOnlyFlag(headers);
  }
  return lastFlag;
}

function versionOnlyFlag(headers: EventHeaders): number {
  for (const k in headers) if (k !== VERSION_HEADER) return -1;
  const raw = headers[VERSION_HEADER];
  const version = Number(raw);
  return Number.isInteger(version) && version >= 2 && version <= MAX_FLAG_VERSION && String(version) === raw ? 0x40 + version : -1;
}

/** The headers a plain record of flag `flag` (not `FLAG_PLAIN` nor `FLAG_EXTRAS`) gives its event: its version. */
export function flagHeaders(flag: number): EventHeaders {
  return { [VERSION_HEADER]: String(flag - 0x40) };
}
