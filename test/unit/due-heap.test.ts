import { describe, expect, it } from 'vitest';
import { DueHeap } from '../../src/due-heap.js';
import { prng } from '../helpers/prng.js';

describe('DueHeap', () => {
  it('pops items by due time, those due together in push order', () => {
    const rand = prng(7);
    const heap = new DueHeap<{ dueAt: number; n: number }>();
    const items = Array.from({ length: 2000 }, (_, n) => ({ dueAt: Math.floor(rand() * 100), n }));
    for (const item of items) heap.push(item);
    expect(heap.size).toBe(2000);
    const out: { dueAt: number; n: number }[] = [];
    for (let item = heap.pop(); item !== undefined; item = heap.pop()) out.push(item);
    expect(out).toEqual([...items].sort((a, b) => a.dueAt - b.dueAt || a.n - b.n));
    expect(heap.peek()).toBeUndefined();
  });
});
