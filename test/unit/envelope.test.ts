import { describe, expect, it } from 'vitest';
import { IdGenerator } from '../../src/envelope.js';
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

describe('partitioning', () => {
  it('maps a key to a stable partition and spreads keys', () => {
    expect(partitionForKey('customer-7', 8)).toBe(partitionForKey('customer-7', 8));
    expect(hashKey('')).toBe(0x811c9dc5);
    const counts = new Array(8).fill(0);
    for (let i = 0; i < 8000; i++) counts[partitionForKey(`k${i}`, 8)]++;
    for (const c of counts) expect(c).toBeGreaterThan(700);
  });
});
