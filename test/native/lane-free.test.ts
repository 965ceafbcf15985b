import { Worker } from 'node:worker_threads';
import { describe, expect, it } from 'vitest';
import { createCore, PushMode, type PartitionCore } from '../../native/loader.js';
import { waitFor } from '../helpers/wait.js';

// Freeing a lane of the partition core (addon and JS fallback): the id names nothing afterwards, its memory
// is given back, 4,096 lanes may be alive at once (not created in a lifetime), and a thread still using the
// id after the free never reaches the lane a later createLane puts in its place.

const enc = (records: string[]) => {
  const bufs = records.map((r) => Buffer.from(r));
  return { bytes: Buffer.concat(bufs), lens: Uint32Array.from(bufs.map((b) => b.length)), chars: Uint32Array.from(records.map((r) => r.length)), n: records.length };
};
const push = (c: PartitionCore, lane: number, records: string[]) => {
  const b = enc(records);
  return c.push(lane, 0, b.bytes, b.lens, b.chars, b.n, PushMode.partial);
};

const loaderUrl = new URL('../../native/loader.ts', import.meta.url).href;
const tsxApi = new URL('../../node_modules/tsx/dist/esm/api/index.mjs', import.meta.url).href;

describe.each(['native', 'js'] as const)('freeing lanes (%s)', (impl) => {
  const core = (capacity: number, arena: number): PartitionCore => createCore(capacity, arena, impl, () => {});

  it('a freed lane is gone for every call, its id never names a lane again, and usage returns to its start', () => {
    const c = core(8, 1024);
    const start = c.usage();
    expect(start).toEqual({ lanes: 0, bytes: 0 });
    const a = c.createLane(2);
    expect(c.usage()).toEqual({ lanes: 1, bytes: 2 * (8 * 24 + 1024) });
    expect(push(c, a, ['[1],'])).toBe(1);
    expect(c.freeLane(a)).toBe(true);
    expect(c.usage()).toEqual(start);
    expect(c.freeLane(a)).toBe(false);
    expect(() => push(c, a, ['[2],'])).toThrow(RangeError);
    expect(() => c.stats(a, 0)).toThrow(RangeError);
    expect(() => c.ack(a, 0, 0, 1)).toThrow(RangeError);
    expect(() => c.takeHeld(a, 0)).toThrow(RangeError);
    expect(c.pop(a, Uint32Array.of(0), 1, 0, 8, new Uint32Array(3), 0, 0)).toBeNull();
    c.notify(a); // nothing to wake, no throw
    const b = c.createLane(1);
    expect(b).not.toBe(a);
    if (impl === 'native') expect(b % 4096).toBe(a % 4096); // the same slot, another generation
    expect(() => push(c, a, ['[3],'])).toThrow(RangeError);
    expect(push(c, b, ['[4],'])).toBe(1);
    expect(c.pop(b, Uint32Array.of(0), 1, 0, 8, new Uint32Array(3), 0, 0)).toBe('[4],');
    expect(c.freeLane(1e15)).toBe(false); // no such id, past the addon's 2^44
    expect(c.freeLane(b)).toBe(true);
    expect(c.usage()).toEqual(start);
    c.close();
    c.release();
  });

  it('creates and frees 5,000 lanes one after another; the addon holds 4,096 at once', () => {
    const c = core(2, 1024);
    for (let i = 0; i < 5000; i++) {
      const lane = c.createLane(1);
      expect(push(c, lane, [`[${i}],`])).toBe(1);
      expect(c.freeLane(lane)).toBe(true);
    }
    expect(c.usage()).toEqual({ lanes: 0, bytes: 0 });
    if (impl === 'native') {
      const lanes = Array.from({ length: 4096 }, () => c.createLane(1));
      expect(() => c.createLane(1)).toThrow(/too many lanes/);
      expect(c.freeLane(lanes[1234]!)).toBe(true);
      lanes[1234] = c.createLane(1);
      expect(new Set(lanes).size).toBe(4096);
      for (const lane of lanes) expect(c.freeLane(lane)).toBe(true);
    }
    expect(c.usage()).toEqual({ lanes: 0, bytes: 0 });
    c.close();
    c.release();
  });

  it('another thread pushing and popping a lane while it is freed: its calls fail cleanly and never reach the lane created in its place', async () => {
    const c = core(64, 4096);
    const a = c.createLane(1);
    // counts: [0] pushes taken, [1] pushes refused (RangeError), [2] other errors, [3] stop
    const counts = new Int32Array(new SharedArrayBuffer(16));
    const code = `
      const { workerData } = require('node:worker_threads');
      import(${JSON.stringify(tsxApi)}).then(async (t) => {
        t.register();
        const { attachCore, PushMode } = await import(${JSON.stringify(loaderUrl)});
        const core = attachCore(workerData.handle);
        const counts = new Int32Array(workerData.counts);
        const lane = workerData.handle.lane;
        const rec = Buffer.from('[0],');
        const lens = Uint32Array.of(rec.length);
        const info = new Uint32Array(3);
        while (Atomics.load(counts, 3) === 0) {
          try {
            if (core.push(lane, 0, rec, lens, lens, 1, PushMode.dropNewest) >= 0) Atomics.add(counts, 0, 1);
            core.pop(lane, Uint32Array.of(0), 1, 0, 16, info, 1000, 0);
          } catch (e) {
            Atomics.add(counts, e instanceof RangeError ? 1 : 2, 1);
          }
        }
        core.release();
      });`;
    const w = new Worker(code, { eval: true, workerData: { handle: c.share(a), counts: counts.buffer } });
    const exited = new Promise((resolve) => w.once('exit', resolve));
    try {
      await waitFor(() => Atomics.load(counts, 0) > 100, 10_000, 'the other thread to use the lane');
      expect(c.freeLane(a)).toBe(true);
      const b = c.createLane(1);
      expect(b).not.toBe(a);
      // Its next 200 tries, all made once the new lane exists: refused, none reaching the new lane (a push
      // that had the old lane in hand before the free may still end after it: at most one taken).
      const taken = Atomics.load(counts, 0);
      const tries = taken + Atomics.load(counts, 1);
      await waitFor(() => Atomics.load(counts, 0) + Atomics.load(counts, 1) >= tries + 200, 10_000, 'the other thread to try 200 more times');
      expect(Atomics.load(counts, 0) - taken).toBeLessThanOrEqual(1);
      expect(c.stats(b, 0)[0]).toBe(0);
      expect(Atomics.load(counts, 2)).toBe(0);
      expect(c.freeLane(b)).toBe(true);
    } finally {
      Atomics.store(counts, 3, 1);
      await exited;
    }
    expect(c.usage()).toEqual({ lanes: 0, bytes: 0 });
    c.close();
    c.release();
  });
});
