/**
 * The last `retain` events of one partition, kept as encoded records so a consumer group created later
 * with `startFrom: '0'` can read them. Records are copied into blocks of preallocated memory (one set of
 * typed arrays per ~256 KiB or per larger unit, not per publish, and the oldest block is reused once dropped): keeping a copy of every one-event unit as its own typed
 * arrays cost three ArrayBuffers per publish, all surviving into the old generation, and made every
 * young-generation GC of a steady publisher take 4-6 ms.
 */
import type { EncodedBatch } from './record.js';

/** Bytes per block at least; a unit larger than this gets a block of its own size. */
const BLOCK_BYTES = 256 * 1024;
/** Records per block at least. */
const BLOCK_RECORDS = 4096;
/**
 * The largest dropped block kept for reuse (one per partition). Units of 4,096 trading events (~350 KB of
 * records) each fill a block of their own size; before dropped blocks larger than the standard size were
 * reused, each such unit allocated ~380 KB of new typed arrays. Larger units allocate their block each time:
 * a spare that size per partition would cost more memory than the allocation costs time.
 */
const SPARE_MAX_BYTES = 1024 * 1024;

class Block implements EncodedBatch {
  n = 0;
  used = 0;
  readonly bytes: Uint8Array;
  readonly lens: Uint32Array;
  readonly chars: Uint32Array;
  constructor(bytes: number, records: number) {
    this.bytes = new Uint8Array(bytes);
    this.lens = new Uint32Array(records);
    this.chars = new Uint32Array(records);
  }

  fits(b: EncodedBatch, size: number): boolean {
    return this.used + size <= this.bytes.length && this.n + b.n <= this.lens.length;
  }

  append(b: EncodedBatch, size: number): void {
    this.bytes.set(b.bytes.subarray(0, size), this.used);
    this.lens.set(b.lens.subarray(0, b.n), this.n);
    this.chars.set(b.chars.subarray(0, b.n), this.n);
    this.used += size;
    this.n += b.n;
  }

  /** The records held, as a batch for `PartitionCore.push` (views, no copy). */
  view(): EncodedBatch {
    return { bytes: this.bytes.subarray(0, this.used), lens: this.lens.subarray(0, this.n), chars: this.chars.subarray(0, this.n), n: this.n };
  }
}

export class History {
  private readonly blocks: Block[] = [];
  /** Events held, at least `limit` once that many were added. */
  events = 0;

  constructor(private readonly limit: number) {}

  add(b: EncodedBatch): void {
    if (b.n === 0) return;
    let size = 0;
    for (let i = 0; i < b.n; i++) size += b.lens[i]!;
    let last = this.blocks[this.blocks.length - 1];
    if (!last || !last.fits(b, size)) {
      const spare = this.spare;
      this.spare = undefined;
      // A new block has a quarter more room than the unit needs, so the next unit of about its size fits the block once it is reused.
      last = spare && spare.fits(b, size) ? spare : new Block(Math.max(BLOCK_BYTES, size + (size >> 2)), Math.max(BLOCK_RECORDS, b.n));
      this.blocks.push(last);
    }
    last.append(b, size);
    this.events += b.n;
    while (this.blocks.length > 1 && this.events - this.blocks[0]!.n >= this.limit) {
      const dropped = this.blocks.shift()!;
      this.events -= dropped.n;
      if (dropped.bytes.length <= SPARE_MAX_BYTES && (this.spare === undefined || dropped.bytes.length >= this.spare.bytes.length)) {
        dropped.n = dropped.used = 0;
        this.spare = dropped;
      }
    }
  }

  /** The largest block dropped lately (up to SPARE_MAX_BYTES), reused as the next one that fits (no new memory, nothing left to collect). */
  private spare: Block | undefined;

  /** The retained records, oldest first, as views valid until the next `add`. */
  chunks(): EncodedBatch[] {
    return this.blocks.map((block) => block.view());
  }
}
