/**
 * The last `maxLen` events of one partition, kept as encoded records so a consumer group created later
 * with `startFrom: '0'` can read them. Records are copied into blocks of preallocated memory (one set of
 * typed arrays per ~256 KiB or per larger unit, not per publish, and the oldest block is reused once dropped): keeping a copy of every one-event unit as its own typed
 * arrays would cost three ArrayBuffers per publish, all surviving into the old generation, and slow every
 * young-generation GC of a steady publisher.
 */
import type { EncodedBatch } from './record.js';

/** Bytes per block at least; a unit larger than this gets a block of its own size. */
const BLOCK_BYTES = 256 * 1024;
/** Records per block at least. */
const BLOCK_RECORDS = 4096;
/**
 * The largest dropped block kept for reuse (one per partition). Units of 4,096 trading events (~350 KB of
 * records) each fill a block of their own size, so dropped blocks larger than the standard size are reused
 * too, or each such unit would allocate new typed arrays. Larger units allocate their block each time:
 * a spare that size per partition would cost more memory than the allocation costs time.
 */
const SPARE_MAX_BYTES = 1024 * 1024;

class Block implements EncodedBatch {
  n = 0;
  used = 0;
  /** Bumped each time the block is reused: a `HistoryMark` of an earlier use no longer applies. */
  gen = 0;
  /** Records taken back (`History.forget`), as [from, to) index pairs; replays skip them. */
  dead: number[] | undefined = undefined;
  deadCount = 0;
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

  /** Records held and not taken back. */
  get live(): number {
    return this.n - this.deadCount;
  }

  /** The records held, as a batch for `PartitionCore.push` (views, no copy; a compacted copy when some were taken back). */
  view(): EncodedBatch {
    if (this.dead !== undefined) return this.compacted(this.dead);
    return { bytes: this.bytes.subarray(0, this.used), lens: this.lens.subarray(0, this.n), chars: this.chars.subarray(0, this.n), n: this.n };
  }

  private compacted(dead: readonly number[]): EncodedBatch {
    const n = this.live;
    const lens = new Uint32Array(n);
    const chars = new Uint32Array(n);
    const parts: Uint8Array[] = [];
    let k = 0;
    let off = 0;
    for (let i = 0; i < this.n; i++) {
      const len = this.lens[i]!;
      if (!isDead(dead, i)) {
        parts.push(this.bytes.subarray(off, off + len));
        lens[k] = len;
        chars[k++] = this.chars[i]!;
      }
      off += len;
    }
    return { bytes: new Uint8Array(Buffer.concat(parts)), lens, chars, n };
  }

  reset(): void {
    this.n = this.used = this.deadCount = 0;
    this.dead = undefined;
    this.gen++;
  }
}

function isDead(dead: readonly number[], i: number): boolean {
  for (let d = 0; d < dead.length; d += 2) if (i >= dead[d]! && i < dead[d + 1]!) return true;
  return false;
}

/** Where `History.mark` found a unit's records, for `forget`. */
export interface HistoryMark {
  readonly block: Block;
  readonly gen: number;
  readonly start: number;
  readonly n: number;
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
    while (this.blocks.length > 1 && this.events - this.blocks[0]!.live >= this.limit) {
      const dropped = this.blocks.shift()!;
      this.events -= dropped.live;
      dropped.reset();
      if (dropped.bytes.length <= SPARE_MAX_BYTES && (this.spare === undefined || dropped.bytes.length >= this.spare.bytes.length)) {
        this.spare = dropped;
      }
    }
  }

  /** The largest block dropped lately (up to SPARE_MAX_BYTES), reused as the next one that fits (no new memory, nothing left to collect). */
  private spare: Block | undefined;

  /** Where the last `add` put its `n` records (call right after it). */
  mark(n: number): HistoryMark | undefined {
    const block = this.blocks[this.blocks.length - 1];
    return block === undefined || n === 0 ? undefined : { block, gen: block.gen, start: block.n - n, n };
  }

  /**
   * Takes back a unit's records from its `from`-th on: a `block` write whose remainder timed out (its
   * publishes rejected, so a caller may publish them again) must not be replayed to groups created later.
   * A no-op once the unit's block was dropped.
   */
  forget(mark: HistoryMark, from: number): void {
    const { block } = mark;
    if (block.gen !== mark.gen || from >= mark.n) return; // dropped (and maybe reused) since
    (block.dead ??= []).push(mark.start + from, mark.start + mark.n);
    block.deadCount += mark.n - from;
    this.events -= mark.n - from;
  }

  /** The retained records, oldest first, as views valid until the next `add`. */
  chunks(): EncodedBatch[] {
    return this.blocks.map((block) => block.view());
  }
}
