/**
 * The record format of the native transport. A record is a fixed header and the bus's payload JSON, reused:
 *
 *   <id: 26 chars><time: 13 digits><flag>[<extras JSON>\n]<payload JSON>
 *
 * `flag` is '0', or '1' when an extras object (key, correlation/causation ids, headers, a source other than the
 * broker's) follows; JSON never contains a raw newline, so '\n' ends it. Records are split with the offsets the
 * core returns from `pop`, so framing is read without parsing. Writing records is record-encode.ts's, reading
 * them record-decode.ts's; this module holds what both agree on, and the batch the core is given.
 */
import type { EventHeaders } from '../../src/envelope.js';
import { ID_BYTES } from '../../src/outgoing.js';

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
