/**
 * Numeric flag values: only plain decimal numbers (integers with optional `_` digit separators) are
 * accepted; anything else is a one-line usage error with exit code 2.
 */
import { describe, expect, it } from 'vitest';
import { intArg, numArg } from '../../benchmarking/lib/config.js';
import { runCli } from './run-cli.js';

describe('numeric flag values', () => {
  it('integers: digits with single _ separators', () => {
    const warmup = intArg('warmup', 0, 100);
    const count = intArg('message-count', 1, 1e9);
    expect(warmup('0')).toBe(0);
    expect(count('100_000')).toBe(100_000);
    for (const bad of ['_', '__', '_5', '5_', '1__0', '', ' ', '-1', '1.5', '1e3', '0x10', '+3']) {
      expect(() => warmup(bad), JSON.stringify(bad)).toThrow(/warmup must be an integer/);
    }
  });

  it('numbers: plain decimals', () => {
    const duration = numArg('duration', 0.1, 3600);
    expect(duration('0.5')).toBe(0.5);
    expect(duration('30')).toBe(30);
    expect(duration('.5')).toBe(0.5);
    for (const bad of ['0x10', '0b11', '0o7', '', ' ', 'abc', '-1', 'Infinity', 'NaN', '1,5']) {
      expect(() => duration(bad), JSON.stringify(bad)).toThrow(/duration must be a number/);
    }
  });

  it('the CLI: `--warmup _` is a one-line usage error, exit 2', async () => {
    const r = await runCli(['run', '--scenario', 'publish-overhead', '--transport', 'noop', '--message-count', '1000', '--iterations', '1', '--warmup', '_', '--quiet']);
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/^error: .*warmup must be an integer/);
    expect(r.stderr).not.toMatch(/\n\s+at /);
  });
});
