/**
 * A sized payload is the JSON {"id":N,"body":"xx..."}: below the JSON without filler, --message-size would give
 * payloads larger than asked (--message-size 16 with 10,000 events: 21 bytes) while every figure is labelled
 * with the asked size. Sizes below the minimum (27 bytes: the largest ids a run can send have 10 digits) are
 * refused before anything runs, saying the minimum; and sizedPayloads refuses to make an oversized payload.
 */
import { describe, expect, it } from 'vitest';
import { MIN_MESSAGE_SIZE } from '../../benchmarking/lib/config.js';
import { sizedPayloads } from '../../benchmarking/lib/payload.js';
import { runCli } from './run-cli.js';

const SMALL = ['-t', 'noop', '--message-count', '100', '--iterations', '1', '--warmup', '0', '--quiet'];

function refusedLine(r: { code: number | null; stdout: string; stderr: string }): string {
  expect(r.code, r.stdout + r.stderr).toBe(2);
  expect(r.stdout).toBe('');
  const lines = r.stderr.split('\n').filter((l) => l.trim() && !l.startsWith('(run with --help'));
  expect(lines).toHaveLength(1);
  return lines[0]!;
}

describe('--message-size minimum', () => {
  it('is the JSON of a payload with a 10-digit id and no filler: 27 bytes', () => {
    expect(MIN_MESSAGE_SIZE).toBe(27);
    expect(JSON.stringify({ id: 9_999_999_999, body: '' }).length).toBe(MIN_MESSAGE_SIZE);
  });

  it('sizedPayloads: never larger than the size asked; below its own minimum it throws', () => {
    for (const [count, size] of [
      [10_000, 27],
      [10_000, 21],
      [1, 18],
      [200, 64],
    ] as const) {
      const lengths = sizedPayloads(count, size).map((p) => JSON.stringify(p).length);
      expect(Math.max(...lengths), `${count} x ${size}`).toBe(size);
    }
    expect(() => sizedPayloads(10_000, 16)).toThrow(/message size 16 B is below the 21 B of the payload \{"id":9999,"body":""\}/);
  });

  it('the CLI refuses a smaller --message-size (and --message-sizes) before anything runs, saying the minimum', async () => {
    expect(refusedLine(await runCli(['run', '-s', 'message-size', ...SMALL, '--message-size', '16']))).toMatch(/message-size 16 is below the minimum of 27 bytes/);
    expect(refusedLine(await runCli(['run', '-s', 'message-size', ...SMALL, '--message-size', '0']))).toMatch(/message-size 0 is below the minimum of 27 bytes/);
    expect(refusedLine(await runCli(['matrix', ...SMALL, '--batch-sizes', '1', '--publisher-counts', '1', '--message-sizes', '128,20']))).toMatch(/message-sizes 20 is below the minimum of 27 bytes/);
    const ok = await runCli(['run', '-s', 'message-size', ...SMALL, '--message-size', '27']);
    expect(ok.code, ok.stderr).toBe(0);
  }, 60_000);
});
