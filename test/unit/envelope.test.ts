import { describe, expect, it } from 'vitest';
import { IdGenerator } from '../../src/envelope.js';
import { EventMeta, Outgoing, writeIdBytes } from '../../src/outgoing.js';
import type { OutgoingEvent } from '../../src/transport.js';
import { hashKey, partitionForKey } from '../../src/partition.js';

describe('IdGenerator', () => {
  it('makes unique, strictly increasing 26-char ids', () => {
    const g = new IdGenerator();
    let prev = '';
    const seen = new Set<string>();
    const t0 = Date.now();
    for (let i = 0; i < 3_000_000; i += 997) {
      // jump the sequence through many 2^10 / 2^20 boundaries
      (g as unknown as { seq: number }).seq = i;
      const id = g.next(t0 + Math.floor(i / 100_000));
      expect(id).toHaveLength(26);
      expect(id > prev).toBe(true);
      seen.add(id);
      prev = id;
    }
    expect(seen.size).toBe(Math.ceil(3_000_000 / 997));
  });

  it('orders ids by time across generators', () => {
    const a = new IdGenerator('AAAAAA');
    const b = new IdGenerator('ZZZZZZ');
    expect(b.next(1000) < a.next(1001)).toBe(true);
  });

  it('never goes backwards when the clock does', () => {
    const g = new IdGenerator();
    const x = g.next(5000);
    const y = g.next(4000);
    expect(y > x).toBe(true);
  });
});

describe('outgoing events', () => {
  /** Events as the bus builds them, `n` ids from `g` (jumping to `seq` first, to cross head changes). */
  function events(g: IdGenerator, n: number, seq: number, time: number): Outgoing[] {
    (g as unknown as { seq: number }).seq = seq;
    const meta = new EventMeta('t', time, { correlationId: 'c' });
    return Array.from({ length: n }, (_, i) => {
      const low = g.step(time + Math.floor(i / 700));
      return new Outgoing(meta, g.head, low, undefined, { i }, undefined, 0);
    });
  }

  it('keep the id as head and tail, and share type, time and options', () => {
    const g = new IdGenerator();
    const [a, b] = events(g, 2, 1023, 1_700_000_000_000);
    const h = new IdGenerator((g as unknown as { node: string }).node);
    (h as unknown as { seq: number }).seq = 1023;
    expect([a!.id, b!.id]).toEqual([h.next(1_700_000_000_000), h.next(1_700_000_000_000)]);
    expect(a!.idHead).not.toBe(b!.idHead); // 1023 -> 1024 starts a new head
    expect([a!.type, a!.time, a!.correlationId, a!.causationId, a!.headers]).toEqual(['t', 1_700_000_000_000, 'c', undefined, undefined]);
  });

  it('writeIdBytes writes each id as its 26 ASCII bytes, across head changes', () => {
    const g = new IdGenerator();
    const evs = events(g, 3000, 1_048_000, Date.now()); // crosses 2^10 and 2^20 sequence boundaries and clock moves
    const out = Buffer.alloc(3000 * 26 + 5, 0x21);
    expect(writeIdBytes(evs, out, 5)).toBe(true);
    expect(out.toString('latin1', 5)).toBe(evs.map((e) => e.id).join(''));
    expect(out.toString('latin1', 0, 5)).toBe('!!!!!');
  });

  it('writeIdBytes takes events built elsewhere, and refuses ids it cannot write as 26 bytes', () => {
    const plain = (id: string) => ({ id }) as OutgoingEvent;
    const ok = [plain('01KAKSB2F0Q3YV7Z0000000001'), ...events(new IdGenerator(), 2, 0, Date.now())];
    const out = Buffer.alloc(26 * 3);
    expect(writeIdBytes(ok, out, 0)).toBe(true);
    expect(out.toString('latin1')).toBe(ok.map((e) => e.id).join(''));
    expect(writeIdBytes([plain('short')], out, 0)).toBe(false);
    expect(writeIdBytes([plain('é'.repeat(26))], out, 0)).toBe(false);
  });
});

describe('partitioning', () => {
  it('maps a key to a stable partition and spreads keys', () => {
    expect(partitionForKey('customer-7', 8)).toBe(partitionForKey('customer-7', 8));
    expect(hashKey('')).toBe(0x811c9dc5);
    const counts = new Array(8).fill(0);
    for (let i = 0; i < 8000; i++) counts[partitionForKey(`k${i}`, 8)]++;
    for (const c of counts) expect(c).toBeGreaterThan(700);
  });
});
