/**
 * Percentile math of the latency summary on small known inputs: HdrHistogram (3 significant digits)
 * within its 0.1% precision, and never a percentile above the recorded maximum (a curve that rises
 * above its own 100th percentile).
 */
import { describe, expect, it } from 'vitest';
import { LatencyRecorder } from '../../benchmarking/lib/latency.js';

function recorder(us: number[]): LatencyRecorder {
  const r = new LatencyRecorder();
  for (const v of us) r.recordNs(v * 1000);
  return r;
}

describe('latency percentiles', () => {
  it('1..100 us: p50 50, p90 90, p99 99, p99.9 and max 100, within 0.1%', () => {
    const s = recorder(Array.from({ length: 100 }, (_, i) => i + 1)).summary('closed');
    expect(s.count).toBe(100);
    expect(s.minUs).toBe(1);
    expect(s.maxUs).toBe(100);
    expect(s.meanUs).toBeCloseTo(50.5, 0);
    for (const [got, want] of [
      [s.p50Us, 50],
      [s.p90Us, 90],
      [s.p99Us, 99],
      [s.p999Us, 100],
    ] as const) {
      expect(Math.abs(got - want) / want).toBeLessThanOrEqual(0.001);
    }
    expect(s.p999Us).toBeLessThanOrEqual(s.maxUs);
  });

  it('no percentile exceeds the maximum; the curve never falls', () => {
    for (const values of [[1, 2, 3, 4], [0.4, 5000], [100], Array.from({ length: 1000 }, (_, i) => 10 + i * 7.3)]) {
      const s = recorder(values).summary('open');
      const max = Math.max(...values);
      expect(s.maxUs).toBeCloseTo(max, 0);
      for (const p of [s.minUs, s.p50Us, s.p90Us, s.p99Us, s.p999Us]) expect(p).toBeLessThanOrEqual(s.maxUs);
      for (let i = 1; i < s.curve.length; i++) expect(s.curve[i]![1]).toBeGreaterThanOrEqual(s.curve[i - 1]![1]);
      expect(s.curve.at(-1)).toEqual([100, s.maxUs]);
    }
  });

  it('two events of 0.4 and 5,000 us: p50 is the smaller, p90 the larger', () => {
    const s = recorder([0.4, 5000]).summary('closed');
    expect(s.p50Us).toBeCloseTo(0.4, 2);
    expect(s.p90Us).toBe(5000);
  });

  it('an empty histogram reports zeros', () => {
    const s = new LatencyRecorder().summary('open');
    expect(s).toMatchObject({ count: 0, minUs: 0, meanUs: 0, p50Us: 0, p99Us: 0, maxUs: 0 });
  });
});
