/**
 * extreme-batching's peak one-second throughput (`extra.peakOneSecond`): the best window of at least 1 s
 * between the run's ~100 ms samples. A run shorter than 1 s has no such window: it reports its whole span's rate
 * (never 0 when it delivered events), with the span's length (`peakWindowMs`) and a note.
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { peakWindow } from '../../benchmarking/scenarios/extreme-batching.js';
import { runCli } from './run-cli.js';

const dir = mkdtempSync(join(tmpdir(), 'eventlane-bench-peak-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('extreme-batching peak throughput', () => {
  it('the best window of at least 1 s, in events/s, and its length', () => {
    // 100 events per 100 ms, then 300 per 100 ms from 1,000 ms to 2,000 ms.
    const samples: [number, number][] = [];
    let n = 0;
    for (let t = 0; t <= 3000; t += 100) {
      samples.push([t, n]);
      n += t >= 1000 && t < 2000 ? 300 : 100;
    }
    expect(peakWindow(samples)).toEqual({ perSecond: 3000, windowMs: 1000 });
    // uneven samples: from each start, the first sample at least 1 s later (0 -> 1,300: 1,000/s; 600 -> 1,700: 2,455/s)
    expect(
      peakWindow([
        [0, 0],
        [600, 600],
        [1300, 1300],
        [1700, 3300],
      ]),
    ).toEqual({ perSecond: 2455, windowMs: 1100 });
  });

  it("a run shorter than 1 s: its whole span's rate, never 0 when events were delivered", () => {
    expect(
      peakWindow([
        [10, 0],
        [110, 1024],
        [310, 3000],
      ]),
    ).toEqual({ perSecond: 10_000, windowMs: 300 });
    expect(
      peakWindow([
        [0, 0],
        [250, 50],
      ]),
    ).toEqual({ perSecond: 200, windowMs: 250 });
    expect(
      peakWindow([
        [0, 0],
        [250, 0],
      ]),
    ).toEqual({ perSecond: 0, windowMs: 250 });
    expect(peakWindow([])).toEqual({ perSecond: 0, windowMs: 0 });
  });

  it("the CLI: --duration 0.3 reports the run's rate as its peak, labelled", async () => {
    const file = join(dir, 'short.json');
    const r = await runCli([
      'run',
      '-s',
      'extreme-batching',
      '-t',
      'noop',
      '--duration',
      '0.3',
      '--publishers',
      '10',
      '--flush-interval',
      '1',
      '--iterations',
      '1',
      '--warmup',
      '0',
      '--quiet',
      '--json',
      file,
    ]);
    expect(r.code, r.stderr).toBe(0);
    const it0 = JSON.parse(readFileSync(file, 'utf8')).runs[0].variants[0].iterations[0];
    expect(it0.events).toBeGreaterThan(0);
    expect(it0.extra.peakOneSecond).toBeGreaterThan(0);
    expect(it0.extra.peakWindowMs).toBeGreaterThanOrEqual(300);
    expect(it0.extra.peakWindowMs).toBeLessThan(1000);
    // the whole span is (nearly) the timed window: the peak is the run's throughput
    expect(Math.abs(it0.extra.peakOneSecond - it0.throughput) / it0.throughput).toBeLessThan(0.05);
    expect(it0.notes).toContain(`run shorter than 1 s: peakOneSecond is the whole run's rate, over its ${it0.extra.peakWindowMs} ms (peakWindowMs)`);
  }, 60_000);
});
