/**
 * The bulk publish path (`bus.publishMany`): every payload of a call is validated (and encoded where needed)
 * before any is queued, so one bad payload sends nothing; then the call is queued in batch-sized slices,
 * waiting for room per slice, as single events or, for a transport that reads runs, as one `Run` per lane. For
 * a transport that takes runs as bytes the call's payloads are written as JSON into one buffer at publish. The
 * returned promise settles once every unit carrying the call's events settled, with a `PublishPartialError`
 * naming the payloads not written. The publisher keeps the calls still queueing, for `close`.
 *
 * The long loops (`parseAll`, `queueSlice`, `BulkCall`'s tracking) are functions of their own, called once per
 * call: a long loop in a function that runs once per call is compiled on the fly (OSR) before the code after it
 * ever ran, and V8's optimized code would then give up at that code (no type feedback) on the next call,
 * leaving the second large publishMany of a process to run its loop in the interpreter until compiled again.
 */
import type { PublishManyOptions } from './bus-types.js';
import { BulkCall } from './bulk-call.js';
import { flat, type PublishOptions } from './envelope.js';
import { BackpressureError, PayloadTooLargeError } from './errors.js';
import { rejected } from './diagnostics.js';
import { NO_ROOM } from './json-writer.js';
import { UNSURE } from './checked-writer.js';
import { EventMeta, Run } from './outgoing.js';
import { partitionForKey } from './partition.js';
import { checkedKey, checkPublishOptions } from './publish-options.js';
import type { Publisher } from './publisher.js';
import { validated, type TypeState } from './type-plans.js';

/** A `publishMany` key function, called with each payload and its index. */
type KeyFn = (data: never, index: number) => string | undefined;

/**
 * Most events of a `publishMany` call written as bytes at publish (`input` `runBytes`). A call is written whole before
 * any of it is queued; a larger one is kept as checked copies and written slice by slice at write time, so
 * its first slices reach the transport (and its consumers) while the rest are encoded, and its memory is not
 * one buffer of all its payloads.
 */
const BYTES_CALL_MAX = 16_384;

/**
 * Publishes `payloads` (an array) of type `t`: validates them all, refuses the call up front with onFull
 * 'reject' when it does not fit, then queues it. Resolves when all were accepted.
 */
export function publishMany(pub: Publisher, t: TypeState, payloads: readonly unknown[], options: PublishManyOptions<never> | undefined): Promise<void> {
  const keyOpt = options?.key;
  const fixedKey = typeof keyOpt === 'string' ? keyOpt : undefined;
  const n = payloads.length;
  let bulk: BulkCall;
  try {
    bulk = checkedCall(pub, t, payloads, options);
  } catch (err) {
    return rejected(t.name, n, err);
  }
  // onFull 'reject': the whole call is refused up front when it does not fit, so nothing is half-sent.
  if (pub.batching.onFull === 'reject' && !pub.batcher.fits(n)) {
    return rejected(t.name, n, new BackpressureError(pub.batcher.pendingEvents, pub.batching.maxPendingEvents, n));
  }
  const call = enqueueMany(pub, t, bulk, fixedKey, options);
  // close() lets calls accepted before it finish every slice (they may be waiting for room).
  pub.bulkCalls.add(call);
  call.then(
    () => pub.bulkCalls.delete(call),
    () => pub.bulkCalls.delete(call),
  );
  return call;
}

/**
 * All-or-nothing: every payload validated (and encoded where needed) before any is queued; throws at the first
 * bad one, or for bad options.
 */
function checkedCall(pub: Publisher, t: TypeState, payloads: readonly unknown[], options: PublishManyOptions<never> | undefined): BulkCall {
  const keyOpt = options?.key;
  const keyFn: KeyFn | undefined = typeof keyOpt === 'function' ? keyOpt : undefined;
  const n = payloads.length;
  const extra = options !== undefined ? checkPublishOptions('publishMany', options) : 0;
  if (t.bytes !== undefined && n <= BYTES_CALL_MAX && keyOpt === undefined && plainOptions(options)) {
    const written = writeAll(pub, t, payloads);
    if (written !== undefined) return written;
  }
  const bulk = new BulkCall(n, t.partitions, keyFn !== undefined);
  // A large call keeps its encoded payloads across young-generation GCs: store them flat. Below a few
  // thousand events they die young anyway and the flat store only costs, hence the threshold.
  parseAll(pub, t, payloads, bulk, keyFn, n > 4096, extra);
  return bulk;
}

/** Options that leave every event's record plain: no correlation or causation id, no headers. */
function plainOptions(o: Omit<PublishOptions, 'key'> | undefined): boolean {
  return o === undefined || (o.correlationId === undefined && o.causationId === undefined && o.headers === undefined);
}

/**
 * Validates (and where needed encodes) every payload of a publishMany call; throws at the first bad one.
 * Nothing before the loop needs type feedback (see `queueSlice`): this runs once per call, and its first
 * run is over before V8 keeps feedback for what it did before its loop.
 */
function parseAll(pub: Publisher, t: TypeState, payloads: readonly unknown[], call: BulkCall, keyFn: KeyFn | undefined, retained: boolean, extra: number): void {
  for (let i = 0; i < payloads.length; i++) {
    call.values[i] = pub.parse(t, payloads[i], i, extra);
    const json = pub.parsedJson;
    call.jsons[i] = retained && json !== undefined ? flat(json) : json;
    if (json !== undefined) call.encoded = true;
    call.sizes[i] = pub.parsedSize;
    if (call.keys) call.keys[i] = checkedKey(keyFn!(payloads[i] as never, i), i);
  }
}

/**
 * `parseAll` for a transport that takes runs as bytes (`capabilities.input` `runBytes`): checks every payload and
 * writes its JSON at publish, `room` bytes after the end of the one before, into one buffer for the call. The
 * payloads are not copied: the bytes are what the call publishes. Undefined when some payload has text the
 * writer leaves to the string encoder (to escape, or not ASCII): the call then takes the usual path.
 */
function writeAll(pub: Publisher, t: TypeState, payloads: readonly unknown[]): BulkCall | undefined {
  const n = payloads.length;
  const room = pub.room;
  const call = new BulkCall(n, t.partitions, false, true);
  const ends = call.ends!;
  const sizes = call.sizes;
  const { check, writer } = t.bytes!;
  let buf = takeBuffer(pub, Math.max(1024, n * (room + 64)));
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
      if (size > pub.maxEventBytes) throw new PayloadTooLargeError(size, pub.maxEventBytes, 'transport.maxEventBytes');
      ends[i] = end;
      sizes[i] = size;
      o = end;
    }
  } finally {
    if (i < n) keepSpare(pub, buf); // refused, or left to the usual path: nothing refers to the buffer
  }
  if (i < n) return undefined;
  call.bytes = buf;
  return call;
}

/**
 * Queues validated events in batch-sized slices, yielding while every write slot is busy, so a call
 * with 100,000 events does not keep 100,000 envelopes alive at once.
 */
async function enqueueMany(pub: Publisher, t: TypeState, call: BulkCall, fixedKey: string | undefined, options: Omit<PublishOptions, 'key'> | undefined): Promise<void> {
  const meta = new EventMeta(t.name, Date.now(), options, t.version); // one publish time for the whole call
  const slice = pub.batching.maxEvents;
  for (let start = 0; start < call.size; start += slice) {
    if (start > 0 && pub.batcher.saturated) await pub.batcher.writable();
    const end = Math.min(call.size, start + slice);
    // Backpressure per slice, not per event: a call larger than maxPendingEvents paces itself.
    const room = pub.batcher.room(end - start);
    if (room !== undefined) await room;
    queueSlice(pub, t, call, fixedKey, meta, start, end);
  }
  try {
    await Promise.all(call.pending);
  } catch {
    const err = call.failure(t.name, await Promise.allSettled(call.pending));
    if (err !== undefined) throw err;
  } finally {
    // Every unit settled: no transport reads the call's bytes any more (`RunBytes`).
    if (call.bytes !== undefined) keepSpare(pub, call.bytes);
  }
}

/**
 * A settled call's byte buffer, kept for the next call written as bytes, up to 8 MiB: a buffer per call would be
 * new memory each time (page faults, and external memory V8 frees only some time after a GC).
 */
function keepSpare(pub: Publisher, buf: Buffer): void {
  if (buf.length <= 8 << 20 && (pub.spare === undefined || pub.spare.length < buf.length)) pub.spare = buf;
}

/** A buffer of at least `size` bytes for a call written as bytes: the spare when it is large enough. */
function takeBuffer(pub: Publisher, size: number): Buffer {
  const spare = pub.spare;
  if (spare !== undefined && spare.length >= size) {
    pub.spare = undefined;
    return spare;
  }
  return Buffer.allocUnsafeSlow(size);
}

/**
 * Queues events `start` to `end` of a publishMany call. Its own function, as is `parseAll` (see the header).
 */
function queueSlice(pub: Publisher, t: TypeState, call: BulkCall, fixedKey: string | undefined, meta: EventMeta, start: number, end: number): void {
  if (pub.runs && call.keys === undefined) return queueRuns(pub, t, call, fixedKey, meta, start, end);
  const { values, jsons, sizes, keys } = call;
  for (let i = start; i < end; i++) {
    const ev = pub.make(t, values[i], jsons[i], meta, keys ? keys[i] : fixedKey, call.partitions);
    values[i] = undefined;
    jsons[i] = undefined;
    const part = ev.partition;
    const p = pub.batcher.addFitted(t.lanes[part]!, ev, sizes[i]!);
    call.track(i, part, p, pub.batcher.placedAt);
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
function queueRuns(pub: Publisher, t: TypeState, call: BulkCall, key: string | undefined, meta: EventMeta, start: number, end: number): void {
  const parts = call.partitions;
  if (parts === 1) return queueRun(pub, t, call, undefined, meta, 0, start, end);
  if (key !== undefined) return queueRun(pub, t, call, key, meta, partitionForKey(key, parts), start, end);
  const m = end - start;
  const q = Math.floor(m / parts);
  const r = m % parts;
  const first = t.rr;
  t.rr += m;
  for (let j = 0, a = start; j < parts && a < end; j++) {
    const b = a + q + (j < r ? 1 : 0);
    queueRun(pub, t, call, undefined, meta, (first + j) % parts, a, b);
    a = b;
  }
}

function queueRun(pub: Publisher, t: TypeState, call: BulkCall, key: string | undefined, meta: EventMeta, part: number, start: number, end: number): void {
  const firstSeq = pub.ids.reserve(meta.time, end - start);
  let run: Run;
  if (call.bytes !== undefined) {
    const ends = call.ends!;
    const bytes = { buffer: call.bytes, start: start === 0 ? 0 : ends[start - 1]!, ends: ends.subarray(start, end), room: pub.room };
    run = new Run(meta, key, part, pub.ids.idPrefix, firstSeq, undefined, undefined, bytes);
  } else {
    const values = call.values.slice(start, end);
    const jsons = call.encoded ? call.jsons.slice(start, end) : undefined;
    call.values.fill(undefined, start, end);
    if (jsons !== undefined) call.jsons.fill(undefined, start, end);
    run = new Run(meta, key, part, pub.ids.idPrefix, firstSeq, values, jsons, undefined);
  }
  pub.batcher.addRun(t.lanes[part]!, run, call.sizes, start, (from, to, p, first) => call.trackRun(start + from, start + to, part, p, first));
}
