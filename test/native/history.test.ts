import { describe, expect, it } from 'vitest';
import { History } from '../../transports/native/history.js';
import type { EncodedBatch } from '../../transports/native/record.js';

/** A batch of records `r<i>` padded to `size` bytes each (ASCII, so bytes = chars). */
function batch(from: number, n: number, size = 16): EncodedBatch {
  const recs = Array.from({ length: n }, (_, k) => `r${from + k}`.padEnd(size, '.'));
  return {
    bytes: new Uint8Array(Buffer.from(recs.join(''))),
    lens: Uint32Array.from(recs, (r) => r.length),
    chars: Uint32Array.from(recs, (r) => r.length),
    n,
  };
}

/** Every record held, oldest first. */
function records(h: History): string[] {
  const out: string[] = [];
  for (const c of h.chunks()) {
    expect(c.lens.length).toBe(c.n);
    let off = 0;
    for (let i = 0; i < c.n; i++) {
      out.push(
        Buffer.from(c.bytes.subarray(off, off + c.lens[i]!))
          .toString()
          .replace(/\.+$/, ''),
      );
      off += c.lens[i]!;
    }
    expect(off).toBe(c.bytes.length);
  }
  return out;
}

describe('native retained history', () => {
  it('keeps the newest events in order, at least `limit` of them, one-event units or many', () => {
    const h = new History(10_000);
    let next = 0;
    for (let u = 0; u < 30_000; u++) h.add(batch(next++, 1));
    for (let u = 0; u < 30; u++) {
      h.add(batch(next, 500));
      next += 500;
    }
    const got = records(h);
    expect(got.length).toBe(h.events);
    expect(got.length).toBeGreaterThanOrEqual(10_000);
    // Whole blocks are dropped, so at most one block (4,096 records) beyond the limit is kept.
    expect(got.length).toBeLessThan(10_000 + 4096 + 500);
    const first = next - got.length;
    expect(got).toEqual(Array.from({ length: got.length }, (_, k) => `r${first + k}`));
  });

  it('copies what it keeps: the caller may reuse the batch memory', () => {
    const h = new History(100);
    const b = batch(0, 3);
    h.add(b);
    b.bytes.fill(0x21);
    b.lens.fill(1);
    expect(records(h)).toEqual(['r0', 'r1', 'r2']);
  });

  it('holds a unit larger than a block whole, and ignores empty units', () => {
    const h = new History(5);
    h.add(batch(0, 0));
    h.add(batch(0, 2, 200_000)); // 400 KB: more than one block's 256 KiB
    h.add(batch(2, 1));
    expect(records(h)).toEqual(['r0', 'r1', 'r2']);
    for (let i = 3; i < 20_000; i++) h.add(batch(i, 1));
    const got = records(h);
    expect(got.at(-1)).toBe('r19999');
    expect(got.length).toBeGreaterThanOrEqual(5);
    expect(got.length).toBeLessThanOrEqual(4096 + 5);
  });

  it('reuses dropped blocks for units larger than a standard block (publishMany of 4,096 small events)', () => {
    const h = new History(10_000);
    const buffers = new Set<ArrayBufferLike>();
    let next = 0;
    for (let u = 0; u < 50; u++) {
      h.add(batch(next, 4096, 86 + (u % 3))); // ~350 KB a unit, sizes varying a little
      next += 4096;
      for (const c of h.chunks()) buffers.add(c.bytes.buffer);
    }
    // 3 blocks hold the newest 10,000+ events, one more is being filled or spare: not a new block per unit.
    expect(buffers.size).toBeLessThanOrEqual(6);
    const got = records(h);
    expect(got.at(-1)).toBe(`r${next - 1}`);
    expect(got.length).toBeGreaterThanOrEqual(10_000);
  });

  it('forget takes back the end of a unit: later reads skip it, the events count drops, other units stay', () => {
    const h = new History(1_000);
    h.add(batch(0, 4));
    h.add(batch(4, 6));
    const mark = h.mark(6)!;
    h.add(batch(10, 3));
    h.forget(mark, 2); // r6..r9 not written
    expect(records(h)).toEqual(['r0', 'r1', 'r2', 'r3', 'r4', 'r5', 'r10', 'r11', 'r12']);
    expect(h.events).toBe(9);
    h.forget(h.mark(3)!, 3); // nothing to take back
    expect(h.events).toBe(9);
  });

  it('a mark of a block dropped (and reused) since is a no-op', () => {
    const h = new History(10);
    h.add(batch(0, 5));
    const mark = h.mark(5)!;
    // Whole blocks of one unit each (a unit larger than the standard block gets its own), so old ones drop.
    for (let u = 0; u < 4; u++) h.add(batch(100 + u * 5000, 5000, 64));
    h.forget(mark, 0);
    expect(records(h).length).toBe(h.events);
    expect(records(h)).not.toContain('r0');
    expect(h.events).toBeGreaterThanOrEqual(10);
  });
});
