/**
 * The benchmark addon's latency floor (benchmarking/native/latency-floor.h): the core driven by C++ threads
 * only, the benchmark's machine-floor row. Every event arrives once, with a finite latency >= 0.
 */
import { execFileSync } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { latencyFloor, type LatencyFloorResult } from '../../benchmarking/lib/floor-binding.js';
import { loadBinding } from '../../native/loader.js';

const COUNT = 2000;

function expectAllDelivered(r: LatencyFloorResult, count: number): void {
  expect(r.received).toBe(count);
  expect(r.unique).toBe(count);
  expect(r.latencyNs).toBeInstanceOf(Float64Array);
  expect(r.latencyNs.length).toBe(count);
  for (const ns of r.latencyNs) {
    expect(Number.isFinite(ns)).toBe(true);
    expect(ns).toBeGreaterThanOrEqual(0);
  }
}

describe('latencyFloor (C++ sender and consumer threads, no JS)', () => {
  for (const consumers of [1, 4]) {
    it(`${consumers} consumer(s): ${COUNT} latencies, every event delivered once`, () => {
      const t0 = performance.now();
      const r = latencyFloor({ rate: 20_000, count: COUNT, consumers });
      expectAllDelivered(r, COUNT);
      // Open loop: the call lasts at least until the last event was due.
      expect(performance.now() - t0).toBeGreaterThanOrEqual(((COUNT - 1) / 20_000) * 1000 - 1);
    });
  }

  for (const consumers of [1, 4]) {
    it(`one burst (rate 0), ${consumers} consumer(s): sent after the consumers idled, every event delivered once`, () => {
      const t0 = performance.now();
      const r = latencyFloor({ rate: 0, count: COUNT, consumers, quietMs: 50 });
      const callMs = performance.now() - t0;
      expectAllDelivered(r, COUNT);
      // The call idles quietMs before it sends; the window is the burst's (first send to last arrival), after it.
      expect(callMs).toBeGreaterThanOrEqual(49);
      expect(r.windowNs).toBeGreaterThan(0);
      expect(r.windowNs / 1e6).toBeLessThanOrEqual(callMs - 49);
      // Each event arrives within the window of the burst it was sent in.
      for (const ns of r.latencyNs) expect(ns).toBeLessThanOrEqual(r.windowNs);
    });
  }

  it('a burst idles as long as quietMs says (the CLI passes QUIET_BEFORE_BURST_MS)', () => {
    const t0 = performance.now();
    const r = latencyFloor({ rate: 0, count: 200, consumers: 1, quietMs: 150 });
    expectAllDelivered(r, 200);
    expect(performance.now() - t0).toBeGreaterThanOrEqual(149);
  });

  it('paced: the window spans the sends (from the first due time to the last arrival)', () => {
    const r = latencyFloor({ rate: 20_000, count: COUNT, consumers: 1 });
    expect(r.windowNs).toBeGreaterThanOrEqual(((COUNT - 1) / 20_000) * 1e9);
  });

  it('with spinning consumers and threads pinned to the CPUs this thread may use', () => {
    const cpus = loadBinding()!.threadCpus();
    expect(cpus.length).toBeGreaterThanOrEqual(2);
    const r = latencyFloor({ rate: 20_000, count: COUNT, consumers: 2, spinUs: 50, cpus });
    expectAllDelivered(r, COUNT);
    // The sending thread got its CPUs back.
    expect(loadBinding()!.threadCpus()).toEqual(cpus);
  });

  it('rejects bad arguments and CPUs the OS refuses', () => {
    expect(() => latencyFloor({ rate: -1, count: 10, consumers: 1 })).toThrow(/rate must be 0 \(one burst\) or a number in \[0.001, 1e\+08\]/);
    expect(() => latencyFloor({ rate: 1e-4, count: 10, consumers: 1 })).toThrow(/rate must be 0 \(one burst\) or a number in/);
    expect(() => latencyFloor({ rate: Number.NaN, count: 10, consumers: 1 })).toThrow(/rate must be 0 \(one burst\) or a number in/);
    expect(() => latencyFloor({ rate: 1000, count: 10, consumers: 0 })).toThrow(/consumers must be/);
    expect(() => latencyFloor({ rate: 1000, count: 10, consumers: 1, cpus: [0] })).toThrow(/cpus must be an array of at least 2/);
    expect(() => latencyFloor({ rate: 0, count: 10, consumers: 1, quietMs: -1 })).toThrow(/quietMs must be a number in \[0, 10000\]/);
    expect(() => latencyFloor({ rate: 0, count: 10, consumers: 1, quietMs: 10_001 })).toThrow(/quietMs must be a number in \[0, 10000\]/);
    expect(() => latencyFloor({ rate: 1000, count: 10, consumers: 1, cpus: [0, 5000] })).toThrow(/consumer thread 0: cpu 5000 is out of range/);
  });

  it('says why when the benchmark addon is not loaded', () => {
    const loader = new URL('../../benchmarking/lib/floor-binding.ts', import.meta.url).href;
    const code = `
      const m = await import(${JSON.stringify(loader)});
      try { m.latencyFloor({ rate: 1000, count: 10, consumers: 1 }); console.log('no error'); } catch (e) { console.log(e.message); }`;
    const out = execFileSync(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', code], { env: { ...process.env, EVENTLANE_NATIVE: '0' }, encoding: 'utf8' });
    expect(out.trim()).toBe('latencyFloor needs the benchmark addon, which did not load (EVENTLANE_NATIVE=0)');
  });
});
