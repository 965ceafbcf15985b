/**
 * A hung iteration does not hang the run: its child process is killed after --iteration-timeout, the
 * variant is reported as failed with the reason, the other variants still run, and the CLI exits 1.
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { runCli } from './run-cli.js';
import { runInChild } from '../../benchmarking/lib/runner.js';

const dir = mkdtempSync(join(tmpdir(), 'eventlane-bench-timeout-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

describe('iteration timeout', () => {
  it('kills an iteration that overruns --iteration-timeout and reports it as a failed iteration', async () => {
    const file = join(dir, 'timeout.json');
    // extreme-batching runs for --duration seconds: 60 s against a 2 s limit stands in for a hung child.
    const r = await runCli([
      'run', '--scenario', 'extreme-batching', '--transport', 'noop', '--duration', '60', '--flush-interval', '1', '--publishers', '10',
      '--iterations', '1', '--warmup', '0', '--iteration-timeout', '2', '--quiet', '--json', file,
    ], 50_000);
    expect(r.wallMs).toBeLessThan(40_000);
    expect(r.code, r.stderr).toBe(1);
    expect(r.stdout).toMatch(/FAILED: iteration timed out after 2 s/);
    const v = JSON.parse(readFileSync(file, 'utf8')).runs[0].variants[0];
    expect(v.error).toMatch(/^iteration timed out after 2 s \(0 warmup \+ 1 measured\); benchmark child (\d+) killed$/);
    expect(v.delivery.ok).toBe(false);
    expect(v.iterations).toHaveLength(0);
    const pid = Number(/child (\d+) killed/.exec(v.error)![1]);
    expect(alive(pid)).toBe(false);
  }, 60_000);

  it('a limit past setTimeout\'s range (a day per iteration, 30 warmups) does not fire at once', async () => {
    // A child that answers at once with no results.
    const script = join(dir, 'quick-child.mjs');
    writeFileSync(script, "process.on('message', () => { process.send({ ok: true, results: [] }, () => process.exit(0)); });\n");
    const req = { scenario: 'publish-overhead', variant: {} as never, warmups: 30, measured: 1 };
    await expect(runInChild(req, 86_400_000, script)).resolves.toEqual([]);
  });

  it('rejects a bad --iteration-timeout in one line', async () => {
    const r = await runCli(['run', '--scenario', 'publish-overhead', '--iteration-timeout', '0']);
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/iteration-timeout must be a number/);
  });
});
