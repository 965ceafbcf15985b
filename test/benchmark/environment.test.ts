/**
 * The report's environment names the commit that was measured, whatever directory the CLI runs from
 * (`npm run benchmark` from a sub-directory, or the CLI started by path from elsewhere).
 */
import { execFileSync } from 'node:child_process';
import { tmpdir } from 'node:os';
import { afterEach, describe, expect, it } from 'vitest';
import { environment } from '../../benchmarking/report/report.js';
import { ROOT } from './run-cli.js';

const cwd = process.cwd();
afterEach(() => process.chdir(cwd));

describe('report environment', () => {
  it('gitCommit is the checkout of the benchmark, also when the working directory is elsewhere', () => {
    const head = execFileSync('git', ['rev-parse', '--short', 'HEAD'], { cwd: ROOT }).toString().trim();
    process.chdir(tmpdir());
    expect(environment(null).gitCommit).toBe(head);
  });
});
