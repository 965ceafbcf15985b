import { describe, expect, it } from 'vitest';
import { Deque } from '../../src/deque.js';
import { prng } from '../helpers/prng.js';

describe('Deque', () => {
  it('matches an array under random pushes, shifts, unshifts and trims, across wraps and growth', () => {
    const rand = prng(11);
    const q = new Deque<{ n: number }>();
    const model: { n: number }[] = [];
    let n = 0;
    for (let step = 0; step < 20_000; step++) {
      const r = rand();
      if (r < 0.45) {
        const item = { n: n++ };
        q.push(item);
        model.push(item);
      } else if (r < 0.85) {
        expect(q.shift()).toBe(model.shift());
      } else if (r < 0.95) {
        const item = { n: n++ };
        q.unshift(item);
        model.unshift(item);
      } else if (r < 0.97) {
        const max = Math.floor(rand() * 8);
        q.trimTo(max);
        while (model.length > max) model.shift();
      } else {
        const items = [{ n: n++ }, { n: n++ }, { n: n++ }];
        q.pushAll(items);
        model.push(...items);
      }
      expect(q.length).toBe(model.length);
      expect(q.peek()).toBe(model[0]);
    }
    expect(q.toArray()).toEqual(model);
  });

  it('keeps its order when it grows while wrapped, and empties to undefined', () => {
    const q = new Deque<number>();
    for (let i = 0; i < 12; i++) q.push(i);
    for (let i = 0; i < 10; i++) q.shift();
    // The ring (16 slots) now wraps: items 10, 11 at its end, then 12..29 force a growth.
    for (let i = 12; i < 30; i++) q.push(i);
    q.unshift(9);
    expect(q.toArray()).toEqual(Array.from({ length: 21 }, (_, i) => i + 9));
    const out: number[] = [];
    for (let x = q.shift(); x !== undefined; x = q.shift()) out.push(x);
    expect(out).toEqual(Array.from({ length: 21 }, (_, i) => i + 9));
    expect(q.length).toBe(0);
    expect(q.peek()).toBeUndefined();
    q.push(1);
    q.clear();
    expect(q.length).toBe(0);
    expect(q.shift()).toBeUndefined();
  });

  it('lets a large ring go once it drains, and works on after', () => {
    const q = new Deque<number>();
    for (let i = 0; i < 5000; i++) q.push(i);
    const ring = (): unknown[] => (q as unknown as { items: unknown[] }).items;
    expect(ring().length).toBe(8192);
    for (let i = 0; i < 5000; i++) expect(q.shift()).toBe(i);
    expect(ring().length).toBe(0);
    q.push(7);
    expect(q.toArray()).toEqual([7]);
  });
});
