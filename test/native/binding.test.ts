import { execFileSync } from 'node:child_process';
import { cpSync, mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { availableImplementation, createCore, nativeLoadError, PushMode, toRingStats, type PartitionCore } from '../../native/loader.js';

const enc = (records: string[]) => {
  const bufs = records.map((r) => Buffer.from(r));
  return { bytes: Buffer.concat(bufs), lens: Uint32Array.from(bufs.map((b) => b.length)), chars: Uint32Array.from(records.map((r) => r.length)), n: records.length };
};
const recs = (n: number, from = 0) => Array.from({ length: n }, (_, i) => `[${from + i}],`);
const decode = (s: string | null): number[] => (s === null ? [] : (JSON.parse('[' + s.slice(0, -1) + ']') as number[][]).map((a) => a[0]!));

describe('native addon loading', () => {
  it('loads the addon on this platform (prebuilt or local build)', () => {
    expect(nativeLoadError()).toBeUndefined();
    expect(availableImplementation()).toBe('native');
  });

  it('EVENTLANE_NATIVE=0 forces the JS fallback, with exactly one warning', () => {
    const loader = new URL('../../native/loader.ts', import.meta.url).href;
    const code = `
      const m = await import(${JSON.stringify(loader)});
      const a = m.createCore(8, 1024, 'auto', (w) => console.log('WARN ' + w));
      const b = m.createCore(8, 1024, 'auto', (w) => console.log('WARN ' + w));
      let err = '';
      try { m.createCore(8, 1024, 'native', () => {}); } catch (e) { err = e.message; }
      console.log(JSON.stringify({ impl: m.availableImplementation(), kinds: [a.kind, b.kind], err }));`;
    const out = execFileSync(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', code], { env: { ...process.env, EVENTLANE_NATIVE: '0' }, encoding: 'utf8' });
    expect(out.match(/^WARN /gm)?.length).toBe(1);
    expect(JSON.parse(out.trim().split('\n').pop()!)).toEqual({ impl: 'js', kinds: ['js', 'js'], err: 'EVENTLANE_NATIVE=0' });
  });
  describe('a local build that does not load', () => {
    // A package root of its own: the loader's sources, a broken (or stale) native/build, and optionally the
    // shipped prebuilt binaries, as after `npm run build:native` under another Node, or from older sources.
    const repo = resolve(__dirname, '../..');
    const load = (prebuilt: boolean): { impl: string; err: string | null; warn: string[] } => {
      const dir = mkdtempSync(join(tmpdir(), 'eventlane-loader-'));
      try {
        writeFileSync(join(dir, 'package.json'), JSON.stringify({ name: 'eventlane', version: '0.0.0', type: 'module' }));
        cpSync(join(repo, 'native', 'loader.ts'), join(dir, 'native', 'loader.ts'));
        cpSync(join(repo, 'native', 'js'), join(dir, 'native', 'js'), { recursive: true });
        mkdirSync(join(dir, 'native', 'build', 'Release'), { recursive: true });
        writeFileSync(join(dir, 'native', 'build', 'Release', 'eventlane.node'), 'not a shared object');
        symlinkSync(join(repo, 'node_modules'), join(dir, 'node_modules'));
        if (prebuilt) cpSync(join(repo, 'prebuilds'), join(dir, 'prebuilds'), { recursive: true });
        const loader = new URL(`file://${join(dir, 'native', 'loader.ts')}`).href;
        const code = `
          const m = await import(${JSON.stringify(loader)});
          const warn = [];
          const core = m.createCore(8, 1024, 'auto', (w) => warn.push(w));
          console.log(JSON.stringify({ impl: core.kind, err: m.nativeLoadError()?.message ?? null, warn }));`;
        const out = execFileSync(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', code], { cwd: repo, encoding: 'utf8' });
        return JSON.parse(out.trim().split('\n').pop()!);
      } finally {
        rmSync(dir, { recursive: true, force: true });
      }
    };

    it('falls back to the shipped prebuilt binary', () => {
      expect(load(true)).toEqual({ impl: 'native', err: null, warn: [] });
    });

    it('without a prebuilt binary, falls back to JS with one warning naming both failures', () => {
      const r = load(false);
      expect(r.impl).toBe('js');
      expect(r.err).toMatch(/native\/build\/Release\/eventlane\.node: .*; prebuilt binary: /);
      expect(r.warn).toHaveLength(1);
      expect(r.warn[0]).toContain(r.err);
    });
  });
});

describe('thread affinity', () => {
  const affinity = new URL('../../transports/native/affinity.ts', import.meta.url).href;
  const run = (code: string, env: Record<string, string> = {}) =>
    execFileSync(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', `const m = await import(${JSON.stringify(affinity)});\n${code}`], {
      env: { ...process.env, ...env },
      encoding: 'utf8',
    });

  it('pins the calling thread, as the kernel reports it, and refuses bad lists with ConfigError', () => {
    const out = run(`
      const { readFileSync } = await import('node:fs');
      const kernel = () => /Cpus_allowed_list:\\s*(\\S+)/.exec(readFileSync('/proc/thread-self/status', 'utf8'))[1];
      const before = m.currentThreadCpus();
      const last = before[before.length - 1];
      const pinned = m.pinCurrentThread([last]);
      const after = m.currentThreadCpus();
      const errs = [];
      for (const bad of [[], [-1], [1.5], [1024], 'x', [1023]]) {
        try { m.pinCurrentThread(bad); errs.push('none'); } catch (e) { errs.push(e.name + ': ' + e.message); }
      }
      console.log(JSON.stringify({ before, last, pinned, after, kernel: kernel(), errs, still: m.currentThreadCpus() }));`);
    const r = JSON.parse(out.trim().split('\n').pop()!);
    expect(r.before.length).toBeGreaterThan(0);
    expect(r.pinned).toBe(true);
    expect(r.after).toEqual([r.last]);
    expect(r.kernel).toBe(String(r.last));
    expect(r.errs.slice(0, 5).every((e: string) => e.startsWith('ConfigError: pinCurrentThread:'))).toBe(true);
    // 1023 is a valid number but not a CPU of this machine: the OS refuses, the thread stays where it was.
    expect(r.errs[5]).toMatch(/^ConfigError: Cannot pin this thread to CPUs 1023: pthread_setaffinity_np: Invalid argument/);
    expect(r.still).toEqual([r.last]);
  });

  it('without the addon, pinCurrentThread changes nothing and says so (false)', () => {
    const out = run(`console.log(JSON.stringify({ pinned: m.pinCurrentThread([0]), cpus: m.currentThreadCpus() ?? null }));`, { EVENTLANE_NATIVE: '0' });
    expect(JSON.parse(out.trim().split('\n').pop()!)).toEqual({ pinned: false, cpus: null });
  });
});

describe.each(['native', 'js'] as const)('partition core (%s)', (impl) => {
  const core = (capacity = 8, arena = 1024): PartitionCore => createCore(capacity, arena, impl, () => {});
  const info = new Uint32Array(2);
  const popAll = (c: PartitionCore, lane: number, p = 0, max = 1000) => decode(c.pop(lane, Uint32Array.of(p), 1, 0, max, info, 0, 0));
  const push = (c: PartitionCore, lane: number, p: number, records: string[], mode: number) => {
    const b = enc(records);
    return c.push(lane, p, b.bytes, b.lens, b.chars, b.n, mode);
  };

  it('is the requested implementation', () => {
    expect(core().kind).toBe(impl);
  });

  it('holds popped records until acknowledged (any order), and hands unacknowledged ones to takeHeld', () => {
    const c = core(8, 1024);
    const lane = c.createLane(1);
    const at = new Uint32Array(3);
    const popHeld = (max: number) => {
      const s = c.pop(lane, Uint32Array.of(0), 1, 0, max, at, 0, 0, undefined, true);
      return { got: decode(s), first: at[2]!, count: at[0]! };
    };
    expect(push(c, lane, 0, recs(8), PushMode.partial)).toBe(8);
    const a = popHeld(3);
    const b = popHeld(3);
    expect([a.got, b.got]).toEqual([
      [0, 1, 2],
      [3, 4, 5],
    ]);
    expect(toRingStats(c.stats(lane, 0))).toMatchObject({ size: 2, held: 6 });
    // Held records keep their room: the ring is still full.
    expect(push(c, lane, 0, recs(1, 8), PushMode.partial)).toBe(0);
    // Acknowledging the second batch first frees nothing (the first is still held)...
    c.ack(lane, 0, b.first, b.count);
    expect(push(c, lane, 0, recs(1, 8), PushMode.partial)).toBe(0);
    // ...the first then frees both.
    c.ack(lane, 0, a.first, a.count);
    expect(toRingStats(c.stats(lane, 0))).toMatchObject({ held: 0 });
    expect(push(c, lane, 0, recs(6, 8), PushMode.partial)).toBe(6);
    // A consumer "dies" holding 6..9, having acknowledged 6 and 8 (out of order).
    const d = popHeld(4);
    expect(d.got).toEqual([6, 7, 8, 9]);
    c.ack(lane, 0, d.first, 1);
    c.ack(lane, 0, (d.first + 2) >>> 0, 1);
    const taken = c.takeHeld(lane, 0)!;
    const [text, offs] = taken;
    expect(Array.from({ length: offs.length - 1 }, (_, i) => text.slice(offs[i], offs[i + 1]))).toEqual(['[7],', '[9],']);
    expect(c.takeHeld(lane, 0)).toBeNull();
    expect(toRingStats(c.stats(lane, 0))).toMatchObject({ size: 4, held: 0 });
    expect(popAll(c, lane)).toEqual([10, 11, 12, 13]);
    expect(push(c, lane, 0, recs(8, 14), PushMode.partial)).toBe(8);
  });

  it('validates capacity and arena size, rounding up to powers of two', () => {
    expect(() => core(1)).toThrow(RangeError);
    expect(() => core(2 ** 25)).toThrow(RangeError);
    expect(() => core(8, 100)).toThrow(RangeError);
    const c = core(1000, 5000);
    expect(c.capacity).toBe(1024);
    expect(c.arenaBytes).toBe(8192);
    expect(() => c.createLane(0)).toThrow(RangeError);
  });

  it('pushes and pops batches in order, across arena wrap-around', () => {
    const c = core(16, 1024);
    const lane = c.createLane(2);
    let next = 0;
    let got: number[] = [];
    for (let round = 0; round < 200; round++) {
      const n = 1 + (round % 7);
      const r = Array.from({ length: n }, (_, i) => `[${next + i},"${'x'.repeat((round * 13) % 90)}"],`);
      expect(push(c, lane, 1, r, PushMode.partial)).toBe(n);
      next += n;
      got = got.concat(popAll(c, lane, 1, 1 + (round % 5)));
      got = got.concat(popAll(c, lane, 1, 1000));
    }
    expect(got).toEqual(Array.from({ length: next }, (_, i) => i));
    expect(toRingStats(c.stats(lane, 1))).toMatchObject({ pushed: next, popped: next, size: 0 });
  });

  it('returns record offsets in UTF-16 units, across batch separators and arena wrap', () => {
    const c = core(16, 1024);
    const lane = c.createLane(1);
    const offs = new Uint32Array(17);
    for (let round = 0; round < 60; round++) {
      const a = [`é${round}${'x'.repeat((round * 7) % 150)}`, `😀b${round}`];
      const b = [`c${round}日本`];
      expect(push(c, lane, 0, a, PushMode.partial)).toBe(2);
      expect(push(c, lane, 0, b, PushMode.partial)).toBe(1);
      const s = c.pop(lane, Uint32Array.of(0), 1, 0, 16, info, 0, 0, offs)!;
      expect(info[0]).toBe(3);
      const got = [0, 1, 2].map((i) => s.slice(offs[i]!, offs[i + 1]!).trimEnd());
      expect(got).toEqual([...a, ...b]);
    }
  });

  it('keeps non-ASCII payloads intact', () => {
    const c = core();
    const lane = c.createLane(1);
    const r = ['["é",1],', '["日本",2],', '["😀",3],'];
    expect(push(c, lane, 0, r, PushMode.partial)).toBe(3);
    const s = c.pop(lane, Uint32Array.of(0), 1, 0, 10, info, 0, 0);
    expect(JSON.parse('[' + s!.slice(0, -1) + ']')).toEqual([
      ['é', 1],
      ['日本', 2],
      ['😀', 3],
    ]);
  });

  it('tryPublish semantics: a partial push reports how many fit (0 = full)', () => {
    const c = core(8);
    const lane = c.createLane(1);
    expect(push(c, lane, 0, recs(10), PushMode.partial)).toBe(8);
    expect(push(c, lane, 0, recs(1, 10), PushMode.partial)).toBe(0);
    expect(toRingStats(c.stats(lane, 0))).toMatchObject({ pushed: 8, droppedNewest: 0, rejected: 0, size: 8 });
  });

  it('probe: says whether all records would fit now, for slots and arena bytes, and changes nothing', () => {
    const c = core(8, 1024);
    const lane = c.createLane(1);
    expect(push(c, lane, 0, recs(6), PushMode.partial)).toBe(6);
    expect(push(c, lane, 0, recs(2, 6), PushMode.probe)).toBe(2);
    expect(push(c, lane, 0, recs(3, 6), PushMode.probe)).toBe(0); // 2 slots left
    expect(toRingStats(c.stats(lane, 0))).toMatchObject({ pushed: 6, rejected: 0, droppedNewest: 0, size: 6 });
    expect(popAll(c, lane)).toEqual([0, 1, 2, 3, 4, 5]);
    // Arena bytes: a probe agrees with an all-or-nothing push that follows it, wherever the positions stand.
    const outcomes = new Set<boolean>();
    for (let i = 0; i < 300; i++) {
      const r = Array.from({ length: 1 + (i % 4) }, (_, k) => `"${i}:${k}:${'w'.repeat((i * 53 + k * 31) % 200)}"`);
      const fits = push(c, lane, 0, r, PushMode.probe);
      outcomes.add(fits > 0);
      expect(push(c, lane, 0, r, PushMode.allOrNothing)).toBe(fits);
      if (i % 3 === 0) c.pop(lane, Uint32Array.of(0), 1, 0, 1000, info, 0, 0);
    }
    expect([...outcomes].sort()).toEqual([false, true]);
  });

  it('counts drop-newest, drop-oldest and error exactly', () => {
    const c = core(8);
    const dn = c.createLane(1);
    expect(push(c, dn, 0, recs(13), PushMode.dropNewest)).toBe(8);
    expect(toRingStats(c.stats(dn, 0))).toMatchObject({ pushed: 8, droppedNewest: 5, size: 8 });
    expect(popAll(c, dn)).toEqual([0, 1, 2, 3, 4, 5, 6, 7]);

    const dold = c.createLane(1);
    expect(push(c, dold, 0, recs(5), PushMode.evictOldest)).toBe(5);
    expect(push(c, dold, 0, recs(8, 5), PushMode.evictOldest)).toBe(8);
    expect(toRingStats(c.stats(dold, 0))).toMatchObject({ pushed: 13, droppedOldest: 5, size: 8 });
    expect(popAll(c, dold)).toEqual([5, 6, 7, 8, 9, 10, 11, 12]);

    const err = c.createLane(1);
    expect(push(c, err, 0, recs(6), PushMode.allOrNothing)).toBe(6);
    expect(push(c, err, 0, recs(3, 6), PushMode.allOrNothing)).toBe(0);
    expect(toRingStats(c.stats(err, 0))).toMatchObject({ pushed: 6, rejected: 3, size: 6 });
    // refuse: counted as rejected, nothing written, whether or not there is room.
    expect(push(c, err, 0, recs(2, 9), PushMode.refuse)).toBe(0);
    expect(popAll(c, err)).toEqual([0, 1, 2, 3, 4, 5]);
    expect(push(c, err, 0, recs(4, 11), PushMode.refuse)).toBe(0);
    expect(toRingStats(c.stats(err, 0))).toMatchObject({ pushed: 6, popped: 6, rejected: 9, size: 0 });
  });

  it('throws a RangeError for an unknown push mode, writing and counting nothing', () => {
    const c = core(8);
    const lane = c.createLane(1);
    for (const mode of [-1, 6, 99]) expect(() => push(c, lane, 0, recs(2), mode)).toThrow(/unknown mode/);
    expect(toRingStats(c.stats(lane, 0))).toMatchObject({ pushed: 0, rejected: 0, droppedNewest: 0, size: 0 });
  });

  it('rejects a record larger than half the arena with ERR_PAYLOAD_TOO_LARGE', () => {
    const c = core(8, 1024);
    const lane = c.createLane(1);
    expect(() => push(c, lane, 0, ['x'.repeat(512)], PushMode.partial)).toThrow(expect.objectContaining({ code: 'ERR_PAYLOAD_TOO_LARGE' }));
    expect(() => push(c, lane, 0, ['x'.repeat(2000)], PushMode.evictOldest)).toThrow(expect.objectContaining({ code: 'ERR_PAYLOAD_TOO_LARGE' }));
  });

  it('a record of up to half the arena always fits an empty ring, wherever its positions stand', () => {
    const c = core(8, 1024);
    const lane = c.createLane(1);
    for (let i = 0; i < 200; i++) {
      const small = 'y'.repeat((i * 37) % 300);
      const big = 'z'.repeat(511 - (i % 3));
      expect(push(c, lane, 0, [small], PushMode.partial)).toBe(1);
      expect(c.pop(lane, Uint32Array.of(0), 1, 0, 8, info, 0, 0)).toBe(small);
      expect(push(c, lane, 0, [big], PushMode.partial)).toBe(1);
      expect(c.pop(lane, Uint32Array.of(0), 1, 0, 8, info, 0, 0)).toBe(big);
    }
  });

  it('refuses arrays too short (or, with the addon, of another element type) instead of reading or writing past them', () => {
    const c = core();
    const lane = c.createLane(1);
    expect(push(c, lane, 0, recs(2), PushMode.partial)).toBe(2);
    const parts = Uint32Array.of(0);
    expect(() => c.pop(lane, parts, 1, 0, 1, new Uint32Array(1), 0, 0)).toThrow(RangeError);
    expect(() => c.pop(lane, parts, 1, 0, 1, new Uint32Array(2), 0, 0, new Uint32Array(2), true)).toThrow(RangeError);
    expect(c.stats(lane, 0)[1]).toBe(0); // nothing popped by the refused calls
    if (impl === 'native') {
      const b = enc(recs(1));
      expect(() => c.push(lane, 0, b.bytes, new Uint8Array(4) as unknown as Uint32Array, b.chars, 1, PushMode.partial)).toThrow(TypeError);
      expect(() => c.push(lane, 0, b.bytes, b.lens, new Float64Array(4) as unknown as Uint32Array, 1, PushMode.partial)).toThrow(TypeError);
      expect(() => c.pop(lane, [0] as unknown as Uint32Array, 1, 0, 1, new Uint32Array(3), 0, 0)).toThrow(TypeError);
      expect(() => c.pop(lane, parts, 1, 0, 1, new Int32Array(3) as unknown as Uint32Array, 0, 0)).toThrow(TypeError);
    }
    expect(c.pop(lane, parts, 1, 0, 8, new Uint32Array(3), 0, 0)).not.toBeNull();
    expect(c.stats(lane, 0)[1]).toBe(2);
  });

  it('throws ERR_CLOSED after close, and pop returns null at once', () => {
    const c = core();
    const lane = c.createLane(1);
    c.close();
    expect(c.closed).toBe(true);
    expect(() => push(c, lane, 0, recs(1), PushMode.partial)).toThrow(expect.objectContaining({ code: 'ERR_CLOSED' }));
    const t0 = performance.now();
    expect(c.pop(lane, Uint32Array.of(0), 1, 0, 10, info, 0, 0)).toBeNull();
    expect(performance.now() - t0).toBeLessThan(50);
  });

  it('shares rings with another thread through share()/attachCore', async () => {
    const { Worker } = await import('node:worker_threads');
    const c = core(64, 4096);
    const lane = c.createLane(1);
    const loader = new URL('../../native/loader.ts', import.meta.url).href;
    const api = new URL('../../node_modules/tsx/dist/esm/api/index.mjs', import.meta.url).href;
    const code = `
      const { workerData, parentPort } = require('node:worker_threads');
      import(${JSON.stringify(api)}).then(async (t) => {
        t.register();
        const { attachCore } = await import(${JSON.stringify(loader)});
        const core = attachCore(workerData);
        const info = new Uint32Array(2);
        let got = [];
        while (got.length < 100) {
          const s = core.pop(workerData.lane, Uint32Array.of(0), 1, 0, 16, info, 20000, 50);
          if (s) got = got.concat(JSON.parse('[' + s.slice(0, -1) + ']').map((a) => a[0]));
          if (core.closed) break;
        }
        core.release();
        parentPort.postMessage(got);
      });`;
    const w = new Worker(code, { eval: true, workerData: c.share(lane) });
    const result = new Promise<number[]>((resolve, reject) => {
      w.once('message', resolve);
      w.once('error', reject);
    });
    for (let i = 0; i < 100; i += 10) {
      let left = recs(10, i);
      while (left.length) {
        const k = push(c, lane, 0, left, PushMode.partial);
        left = left.slice(k);
        if (left.length) await new Promise((r) => setTimeout(r, 1));
      }
    }
    expect(await result).toEqual(Array.from({ length: 100 }, (_, i) => i));
    await w.terminate();
    c.close();
  });
});
