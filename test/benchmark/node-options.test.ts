/**
 * `--node-option`: flags for the node of every benchmark child process, recorded in the report. Node itself
 * judges the flag (an unknown one fails each iteration with node's message); a malformed value, or the
 * flag with --no-fork (no child to pass it to), is a usage error.
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { runCli } from './run-cli.js';

const dir = mkdtempSync(join(tmpdir(), 'eventlane-bench-node-options-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const TINY = ['run', '--scenario', 'publish-overhead', '--transport', 'noop', '--message-count', '5000', '--iterations', '1', '--warmup', '0'];

describe('benchmark CLI --node-option', () => {
  it('runs every child with the flags and records them in the report', async () => {
    const file = join(dir, 'opts.json');
    const r = await runCli([...TINY, '--node-option=--max-semi-space-size=32', '--node-option', '--stack-size=2000', '--json', file]);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toContain('node options --max-semi-space-size=32 --stack-size=2000');
    const report = JSON.parse(readFileSync(file, 'utf8'));
    expect(report.environment.nodeOptions).toEqual(['--max-semi-space-size=32', '--stack-size=2000']);
    expect(report.runs[0].variants.every((v: { error?: string }) => v.error === undefined)).toBe(true);
  });

  it('leaves nodeOptions out of a report run without the flag', async () => {
    const file = join(dir, 'plain.json');
    const r = await runCli([...TINY, '--quiet', '--json', file]);
    expect(r.code, r.stderr).toBe(0);
    expect(JSON.parse(readFileSync(file, 'utf8')).environment).not.toHaveProperty('nodeOptions');
  });

  it("a flag node does not know fails each iteration with node's own message", async () => {
    const r = await runCli([...TINY, '--quiet', '--node-option=--no-such-node-flag']);
    expect(r.code).toBe(1);
    // Warnings wrap at 120 columns: read them unwrapped.
    expect((r.stdout + r.stderr).replace(/\n\s+/g, ' ')).toMatch(/FAILED: benchmark child exited .*bad option: --no-such-node-flag/);
  });

  it('malformed values and --no-fork are usage errors', async () => {
    const bad = await runCli([...TINY, '--node-option=max-semi-space-size']);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toMatch(/node-option must be one node flag/);
    const noFork = await runCli([...TINY, '--no-fork', '--node-option=--max-semi-space-size=32']);
    expect(noFork.code).toBe(2);
    expect(noFork.stderr).toMatch(/cannot be used with --no-fork/);
  });
});
