import { Worker } from 'node:worker_threads';
import { describe, expect, it } from 'vitest';
import { createCore, PushMode, toRingStats, type PartitionCore, type SharedCoreHandle } from '../../native/loader.js';

// The partition core (addon and JS fallback) where threads race: acks that land after takeHeld, pops from
// several threads, a thread terminated mid-ack, stats read while others pop.

const enc = (records: string[]) => {
  const bufs = records.map((r) => Buffer.from(r));
  return { bytes: Buffer.concat(bufs), lens: Uint32Array.from(bufs.map((b) => b.length)), chars: Uint32Array.from(records.map((r) => r.length)), n: records.length };
};
const recs = (n: number, from = 0) => Array.from({ length: n }, (_, i) => `[${from + i}],`);
const decode = (s: string | null): number[] => (s === null ? [] : (JSON.parse('[' + s.slice(0, -1) + ']') as number[][]).map((a) => a[0]!));
const taken = (t: [string, Uint32Array] | null) => (t === null ? [] : decode(t[0]));

const loaderUrl = new URL('../../native/loader.ts', import.meta.url).href;
const tsxApi = new URL('../../node_modules/tsx/dist/esm/api/index.mjs', import.meta.url).href;

/**
 * Starts a worker thread that attaches to `workerData.handle` as `core` and runs `body` (an async function
 * body; `workerData`, `parentPort` and `enc` are in scope). Resolves with the worker once it runs `body`.
 */
function startWorker(body: string, workerData: { handle: SharedCoreHandle } & Record<string, unknown>): Promise<Worker> {
  const code = `
    const { workerData, parentPort } = require('node:worker_threads');
    const enc = (records) => {
      const bufs = records.map((r) => Buffer.from(r));
      return { bytes: Buffer.concat(bufs), lens: Uint32Array.from(bufs.map((b) => b.length)), chars: Uint32Array.from(records.map((r) => r.length)), n: records.length };
    };
    import(${JSON.stringify(tsxApi)}).then(async (t) => {
      t.register();
      const { attachCore } = await import(${JSON.stringify(loaderUrl)});
      const core = attachCore(workerData.handle);
      parentPort.postMessage('ready');
      ${body}
    });`;
  const w = new Worker(code, { eval: true, workerData });
  return new Promise((resolve, reject) => {
    w.once('message', () => resolve(w));
    w.once('error', reject);
  });
}
const result = <T>(w: Worker) =>
  new Promise<T>((resolve, reject) => {
    w.once('message', resolve);
    w.once('error', reject);
  });

describe.each(['native', 'js'] as const)('partition core under racing threads (%s)', (impl) => {
  const core = (capacity: number, arena: number): PartitionCore => createCore(capacity, arena, impl, () => {});
  const push = (c: PartitionCore, lane: number, p: number, records: string[], mode = PushMode.partial) => {
    const b = enc(records);
    return c.push(lane, p, b.bytes, b.lens, b.chars, b.n, mode);
  };

  it('an ack that lands after takeHeld took its records and the ring wrapped changes nothing', () => {
    const c = core(4, 1024);
    const lane = c.createLane(1);
    const at = new Uint32Array(3);
    const popHeld = (max: number) => {
      const got = decode(c.pop(lane, Uint32Array.of(0), 1, 0, max, at, 0, 0, undefined, true));
      return { got, first: at[2]!, count: at[0]! };
    };
    expect(push(c, lane, 0, recs(4))).toBe(4);
    const old = popHeld(4); // a live consumer holds 0..3 ...
    expect(taken(c.takeHeld(lane, 0))).toEqual([0, 1, 2, 3]); // ... that the main thread takes back
    expect(push(c, lane, 0, recs(4, 4))).toBe(4); // the ring wraps: positions 4..7 reuse the slots
    const now = popHeld(2);
    expect(now).toEqual({ got: [4, 5], first: 4, count: 2 });
    c.ack(lane, 0, 5, 1);
    c.ack(lane, 0, old.first, old.count); // the old holder's late ack
    c.ack(lane, 0, 4, 1);
    expect(toRingStats(c.stats(lane, 0))).toMatchObject({ size: 2, held: 0 });
    expect(c.takeHeld(lane, 0)).toBeNull();
    // The room of 4 and 5 is back; 6 and 7 are still there, then everything goes round again.
    expect(push(c, lane, 0, recs(2, 8))).toBe(2);
    expect(decode(c.pop(lane, Uint32Array.of(0), 1, 0, 10, at, 0, 0))).toEqual([6, 7, 8, 9]);
    expect(push(c, lane, 0, recs(4, 10))).toBe(4);
    expect(toRingStats(c.stats(lane, 0))).toMatchObject({ pushed: 14, popped: 10, size: 4, held: 0 });
    // A late ack of records that the wrapped ring holds unacknowledged now does not release them either.
    const again = popHeld(4);
    expect(again.got).toEqual([10, 11, 12, 13]);
    c.ack(lane, 0, old.first, old.count);
    c.ack(lane, 0, now.first, now.count);
    expect(toRingStats(c.stats(lane, 0))).toMatchObject({ size: 0, held: 4 });
    expect(push(c, lane, 0, recs(1, 14))).toBe(0);
    expect(taken(c.takeHeld(lane, 0))).toEqual([10, 11, 12, 13]);
    expect(push(c, lane, 0, recs(4, 14))).toBe(4);
  });

  it('takeHeld with a holder takes only the records that holder popped; a wrapped ring does not keep an old mark', () => {
    const c = core(8, 1024);
    const lane = c.createLane(1);
    const at = new Uint32Array(3);
    const popAs = (holder: number, max: number) => decode(c.pop(lane, Uint32Array.of(0), 1, 0, max, at, 0, 0, undefined, true, holder));
    expect(push(c, lane, 0, recs(6))).toBe(6);
    expect(popAs(1, 2)).toEqual([0, 1]);
    expect(popAs(2, 2)).toEqual([2, 3]);
    expect(popAs(1, 1)).toEqual([4]);
    const fifth = at[2]!;
    expect(c.takeHeld(lane, 0, 3)).toBeNull(); // nobody's
    expect(taken(c.takeHeld(lane, 0, 1))).toEqual([0, 1, 4]); // holder 1's alone...
    expect(toRingStats(c.stats(lane, 0))).toMatchObject({ held: 3 }); // ...2 and 3 still held (and 4, behind them)
    expect(taken(c.takeHeld(lane, 0, 2))).toEqual([2, 3]);
    expect(decode(c.pop(lane, Uint32Array.of(0), 1, 0, 10, at, 0, 0))).toEqual([5]);
    // The ring goes round: slot of record 4 is reused by record 12, popped by holder 2. Holder 1's old mark
    // is gone (the producer's claim clears it), and its late ack changes nothing.
    expect(push(c, lane, 0, recs(8, 6))).toBe(8);
    expect(decode(c.pop(lane, Uint32Array.of(0), 1, 0, 6, at, 0, 0))).toEqual([6, 7, 8, 9, 10, 11]);
    expect(popAs(2, 2)).toEqual([12, 13]);
    c.ack(lane, 0, fifth, 1);
    expect(c.takeHeld(lane, 0, 1)).toBeNull();
    expect(taken(c.takeHeld(lane, 0))).toEqual([12, 13]); // without a holder: everyone's
    // Held and not marked (a pop cut off between its claim and its marks, as a terminated JS thread can be):
    // any holder's takeHeld takes it.
    expect(push(c, lane, 0, recs(1, 14))).toBe(1);
    expect(popAs(0, 1)).toEqual([14]);
    expect(taken(c.takeHeld(lane, 0, 1))).toEqual([14]);
  });

  it('counts every pop exactly when two threads pop the same ring', async () => {
    const n = 1 << 17;
    const c = core(n, 1 << 21);
    const lane = c.createLane(1);
    expect(push(c, lane, 0, recs(n))).toBe(n);
    const go = new SharedArrayBuffer(4);
    const body = `
      const go = new Int32Array(workerData.go);
      Atomics.add(go, 0, 1);
      while (Atomics.load(go, 0) < 2);
      const info = new Uint32Array(3);
      let got = 0;
      for (;;) {
        if (core.pop(workerData.handle.lane, Uint32Array.of(0), 1, 0, 1, info, 0, 0) === null) break;
        got += info[0];
      }
      core.release();
      parentPort.postMessage(got);`;
    const workers = await Promise.all([0, 1].map(() => startWorker(body, { handle: c.share(lane), go })));
    const counts = await Promise.all(workers.map((w) => result<number>(w)));
    await Promise.all(workers.map((w) => w.terminate()));
    expect(counts[0]! + counts[1]!).toBe(n);
    expect(Math.min(...counts)).toBeGreaterThan(0);
    expect(toRingStats(c.stats(lane, 0))).toMatchObject({ pushed: n, popped: n, size: 0, held: 0 });
  });

  it('a thread terminated while it acknowledges leaves a ring that still releases', async () => {
    // Each worker consumes its own partition, which the main thread (the producer) keeps full: it pops a
    // whole ring with hold and acknowledges it, all but the first record, then the first, which releases
    // the whole batch in one go (lock-free in the JS core too, so no lock dies with the thread). The main
    // thread terminates each worker as it starts that last ack, then takes back what it held and drains the
    // ring, and all the room must be free again.
    // Two workers, many rounds: with more spinning threads than cores, the main thread could wait minutes for
    // a worker to be scheduled inside its ack window.
    const cap = 2048;
    const workers = 2;
    const batch = enc(recs(cap));
    for (let round = 0; round < 10; round++) {
      const c = core(cap, 1 << 16);
      const lane = c.createLane(workers);
      const fill = (p: number) => c.push(lane, p, batch.bytes, batch.lens, batch.chars, batch.n, PushMode.partial);
      const shared = new SharedArrayBuffer(8 * workers);
      const body = `
        const { lane, p, cap } = workerData;
        const rounds = new Int32Array(workerData.shared, 0, ${workers});
        const releasing = new Int32Array(workerData.shared, ${4 * workers}, ${workers});
        const info = new Uint32Array(3);
        for (;;) {
          if (core.pop(lane, Uint32Array.of(p), 1, 0, cap, info, 0, 0, undefined, true) === null) continue;
          core.ack(lane, p, (info[2] + 1) >>> 0, info[0] - 1);
          Atomics.store(releasing, p, 1);
          core.ack(lane, p, info[2], 1);
          Atomics.store(releasing, p, 0);
          Atomics.add(rounds, p, 1);
        }`;
      const ws = await Promise.all(Array.from({ length: workers }, (_, p) => startWorker(body, { handle: c.share(lane), lane, p, cap, shared })));
      const rounds = new Int32Array(shared, 0, workers);
      const releasing = new Int32Array(shared, 4 * workers, workers);
      // Let every worker go round a few times.
      while (Array.from({ length: workers }, (_, p) => Atomics.load(rounds, p)).some((x) => x < 3)) {
        for (let p = 0; p < workers; p++) fill(p);
        await new Promise((r) => setImmediate(r));
      }
      const stopped: Promise<number>[] = [];
      for (let p = 0; p < workers; p++) {
        while (Atomics.load(releasing, p) === 0) fill(p);
        stopped.push(ws[p]!.terminate());
      }
      await Promise.all(stopped);
      for (let p = 0; p < workers; p++) {
        c.takeHeld(lane, p);
        while (c.pop(lane, Uint32Array.of(p), 1, 0, cap, new Uint32Array(3), 0, 0) !== null);
        expect(toRingStats(c.stats(lane, p))).toMatchObject({ size: 0, held: 0 });
        expect(fill(p)).toBe(cap);
      }
      c.close();
    }
  }, 120_000);

  it('stats never report more records waiting or held than the ring has slots, while other threads pop and ack', async () => {
    const cap = 64;
    const c = core(cap, 1 << 14);
    const lane = c.createLane(1);
    const stop = new SharedArrayBuffer(4);
    // One producer that also consumes, and two consumers that pop with hold and acknowledge at once.
    const producer = `
      const stop = new Int32Array(workerData.stop);
      const b = enc(Array.from({ length: 16 }, (_, i) => '[' + i + '],'));
      const info = new Uint32Array(3);
      while (Atomics.load(stop, 0) === 0) {
        core.push(workerData.handle.lane, 0, b.bytes, b.lens, b.chars, b.n, 0);
        if (core.pop(workerData.handle.lane, Uint32Array.of(0), 1, 0, 4, info, 0, 0, undefined, true)) core.ack(workerData.handle.lane, 0, info[2], info[0]);
      }
      parentPort.postMessage('done');`;
    const consumer = `
      const stop = new Int32Array(workerData.stop);
      const info = new Uint32Array(3);
      while (Atomics.load(stop, 0) === 0) {
        if (core.pop(workerData.handle.lane, Uint32Array.of(0), 1, 0, 3, info, 0, 0, undefined, true)) core.ack(workerData.handle.lane, 0, info[2], info[0]);
      }
      parentPort.postMessage('done');`;
    const ws = await Promise.all([producer, consumer, consumer].map((body) => startWorker(body, { handle: c.share(lane), stop })));
    const done = ws.map((w) => result<string>(w));
    let worst = { size: 0, held: 0 };
    let samples = 0;
    const until = performance.now() + 1500;
    while (performance.now() < until) {
      for (let i = 0; i < 1000; i++) {
        const s = toRingStats(c.stats(lane, 0));
        if (s.size > worst.size) worst = { ...worst, size: s.size };
        if (s.held > worst.held) worst = { ...worst, held: s.held };
      }
      samples += 1000;
      await new Promise((r) => setImmediate(r));
    }
    Atomics.store(new Int32Array(stop), 0, 1);
    await Promise.all(done);
    await Promise.all(ws.map((w) => w.terminate()));
    expect(samples).toBeGreaterThan(1000);
    expect(worst.size).toBeLessThanOrEqual(cap);
    expect(worst.held).toBeLessThanOrEqual(cap);
  }, 30_000);
});
