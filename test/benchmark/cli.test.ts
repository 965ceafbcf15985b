/**
 * The benchmark CLI: help, one-line errors, a tiny noop run producing valid JSON whose figures agree
 * with the events the transport itself counted.
 */
import { execFileSync, spawn } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { alive, ROOT, runCli } from './run-cli.js';
import { sleep, waitFor } from '../helpers/wait.js';

const dir = mkdtempSync(join(tmpdir(), 'eventlane-bench-test-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

function oneLineError(r: { code: number | null; stderr: string }): string {
  expect(r.code).not.toBe(0);
  const lines = r.stderr.split('\n').filter((l) => l.trim() && !l.startsWith('(run with --help'));
  expect(lines).toHaveLength(1);
  expect(r.stderr).not.toMatch(/\n\s+at /); // no stack trace
  return lines[0]!;
}

/** Pids of `pid`'s benchmark iteration children (not tsx's esbuild service). */
function childrenOf(pid: number): number[] {
  try {
    const lines = execFileSync('ps', ['-o', 'pid=,args=', '--ppid', String(pid)], { encoding: 'utf8' }).split('\n');
    return lines.filter((l) => /lib\/child\.[jt]s/.test(l)).map((l) => Number(l.trim().split(/\s+/)[0]));
  } catch {
    return []; // ps exits 1 when there are none
  }
}

describe('benchmark CLI', () => {
  it('SIGTERM to the CLI ends the child running its iteration too (it ran on, orphaned), exit 143', async () => {
    // One iteration of ~4 s (400 events at 100/s) in a child process.
    const cli = spawn(
      process.execPath,
      [
        '--import',
        'tsx',
        'benchmarking/cli.ts',
        'run',
        '-s',
        'latency-sustained',
        '-t',
        'memory',
        '--message-count',
        '400',
        '--rate',
        '100',
        '--partitions',
        '1',
        '--consumers',
        '1',
        '--iterations',
        '1',
        '--warmup',
        '0',
      ],
      { cwd: ROOT, stdio: 'ignore' },
    );
    const exited = new Promise<number | null>((resolve) => cli.on('exit', (code) => resolve(code)));
    let kids: number[] = [];
    await waitFor(() => (kids = childrenOf(cli.pid!)).length > 0, 20_000, 'the iteration child');
    await sleep(300);
    cli.kill('SIGTERM');
    expect(await exited).toBe(143);
    await waitFor(() => kids.every((k) => !alive(k)), 5000, 'the child gone');
  });

  it('--help documents every flag', async () => {
    const r = await runCli(['run', '--help']);
    expect(r.code).toBe(0);
    for (const flag of [
      '--transport',
      '--scenario',
      '--message-count',
      '--message-size',
      '--batch-size',
      '--flush-interval',
      '--publishers',
      '--consumers',
      '--partitions',
      '--rate',
      '--duration',
      '--iterations',
      '--warmup',
      '--redis-url',
      '--json',
      '--markdown',
      '--html',
    ])
      expect(r.stdout).toContain(flag);
    const m = await runCli(['matrix', '--help']);
    expect(m.stdout).toContain('--batch-sizes');
  });

  it('lists the scenarios', async () => {
    const r = await runCli(['list']);
    expect(r.code).toBe(0);
    for (const s of ['publishing-throughput', 'extreme-batching', 'partition-scaling', 'latency-burst', 'latency-sustained', 'broker-throughput', 'message-size', 'consumer-groups', 'end-to-end'])
      expect(r.stdout).toContain(s);
  });

  it('unknown scenario: one-line error, non-zero exit', async () => {
    const line = oneLineError(await runCli(['run', '--scenario', 'no-such-thing']));
    expect(line).toMatch(/Unknown scenario "no-such-thing"/);
  });

  it('bad flag values: one-line error, non-zero exit', async () => {
    expect(oneLineError(await runCli(['run', '--scenario', 'publish-overhead', '--message-count', 'lots']))).toMatch(/message-count/);
    expect(oneLineError(await runCli(['run', '--scenario', 'publish-overhead', '--transport', 'carrier-pigeon']))).toMatch(/transport/);
    expect(oneLineError(await runCli(['run', '--scenario', 'latency-burst', '--transport', 'noop']))).toMatch(/runs on/);
    // Checked against the transport's options before any child runs (a misspelt key failed every row there).
    expect(oneLineError(await runCli(['run', '--scenario', 'publish-overhead', '--transport', 'memory', '--transport-option', 'partitons=2']))).toMatch(
      /transport-option for memory: partitons: not an option/,
    );
    expect(oneLineError(await runCli(['run', '--scenario', 'publish-overhead', '--transport', 'memory', '--transport-option', 'maxLen=-1']))).toMatch(/maxLen: Too small/);
  });

  it('an output file that cannot be written is refused before the run (json, html; matrix too), exit 2', async () => {
    const run = ['run', '--scenario', 'publish-overhead', '--transport', 'noop', '--message-count', '1000', '--iterations', '1', '--warmup', '0', '--quiet'];
    const json = await runCli([...run, '--json', '/nonexistent/dir/r.json', '--html', join(dir, 'r.html')]);
    expect(oneLineError(json)).toMatch(/--json \/nonexistent\/dir\/r\.json: its directory \/nonexistent\/dir does not exist; nothing was run/);
    expect(json.code).toBe(2);
    expect(json.stdout).not.toContain('publish-overhead on noop');
    const html = await runCli([...run, '--html', dir]);
    expect(oneLineError(html)).toMatch(/--html .*: it is a directory/);
    const half = join(dir, 'half-matrix.md');
    writeFileSync(half, 'x\n<!-- benchmark-results:start -->\n');
    const matrix = await runCli([
      'matrix',
      '-t',
      'noop',
      '--message-count',
      '1000',
      '--batch-sizes',
      '1,4000',
      '--publisher-counts',
      '1',
      '--message-sizes',
      '128',
      '--iterations',
      '1',
      '--warmup',
      '0',
      '--quiet',
      '--markdown',
      half,
    ]);
    expect(oneLineError(matrix)).toMatch(/--markdown .*half-matrix\.md: it has a/);
    expect(matrix.stdout).toBe('');
  }, 60_000);

  it('--markdown into a file with one results marker and not the other: refused before the run, the file kept', async () => {
    const file = join(dir, 'half-marked.md');
    const text = '# Our results\n\nprose\n\n<!-- benchmark-results:start -->\nold tables\n';
    writeFileSync(file, text);
    const args = ['run', '--scenario', 'publish-overhead', '--transport', 'noop', '--message-count', '1000', '--iterations', '1', '--warmup', '0', '--quiet', '--markdown', file];
    // Refused before the run: the file is not replaced with the run's tables.
    const refused = await runCli(args);
    expect(oneLineError(refused)).toMatch(/--markdown .*half-marked\.md: it has a <!-- benchmark-results:start --> line and no <!-- benchmark-results:end --> line/);
    expect(refused.stdout).not.toContain('publish-overhead on noop'); // nothing ran
    expect(readFileSync(file, 'utf8')).toBe(text);
    // With both markers only the section is replaced.
    writeFileSync(file, `${text}<!-- benchmark-results:end -->\n\nafter\n`);
    const r = await runCli(args);
    expect(r.code, r.stderr).toBe(0);
    const out = readFileSync(file, 'utf8');
    expect(out.startsWith('# Our results\n\nprose\n\n<!-- benchmark-results:start -->\n')).toBe(true);
    expect(out.endsWith('<!-- benchmark-results:end -->\n\nafter\n')).toBe(true);
    expect(out).toContain('publish-overhead on noop');
    expect(out).not.toContain('old tables');
  }, 60_000);

  it('unreachable Redis: one-line error, non-zero exit', async () => {
    const line = oneLineError(await runCli(['run', '--scenario', 'publishing-throughput', '--transport', 'redis', '--redis-url', 'redis://127.0.0.1:1', '--iterations', '1']));
    expect(line).toMatch(/Cannot reach Redis at redis:\/\/127\.0\.0\.1:1/);
  });

  it('suite --transport memory runs every scenario on memory (publish-overhead and extreme-batching stayed on noop)', async () => {
    const file = join(dir, 'suite.json');
    const r = await runCli([
      'suite',
      '-t',
      'memory',
      '--message-count',
      '300',
      '--iterations',
      '1',
      '--warmup',
      '0',
      '--duration',
      '0.2',
      '--rate',
      '5000',
      '--partitions',
      '1',
      '--consumers',
      '1',
      '--publishers',
      '10',
      '--quiet',
      '--json',
      file,
    ]);
    expect(r.code, r.stderr).toBe(0);
    const runs = JSON.parse(readFileSync(file, 'utf8')).runs as { scenario: string; transport: string }[];
    expect(runs.map((x) => x.scenario)).toContain('publish-overhead');
    expect(runs.filter((x) => x.transport !== 'memory')).toEqual([]);
  });

  it("--no-fork says in the heading that every iteration ran in the CLI's own process", async () => {
    const r = await runCli(['run', '-s', 'publish-overhead', '-t', 'noop', '--message-count', '2000', '--iterations', '1', '--warmup', '0', '--no-fork']);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toContain("1 iteration(s) + 0 warmup, all in the CLI's own process (--no-fork");
    expect(r.stdout).not.toContain('each in a fresh process');
  });

  it('no ratio to a reference whose setup the run does not match (another transport, event count, rate): the notes say what differs', async () => {
    const file = join(dir, 'reference-setup.json');
    const r = await runCli([
      'run',
      '-s',
      'publishing-throughput',
      '-t',
      'noop',
      '--message-count',
      '1000',
      '--batch-size',
      '1',
      '--publishers',
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
    const v = JSON.parse(readFileSync(file, 'utf8')).runs[0].variants[0];
    expect(v.seed.throughput).toBe(2197);
    expect(v.ratios.vsSeed).toBeUndefined();
    expect(v.seedSetupDiffers).toBe('transport noop (reference redis), messageCount 1000 (reference 100000)');
    // The note under the table, wrapped at 120 columns.
    expect(r.stdout.replace(/\n {4}/g, ' ')).toContain(`n/a (setup): this run's transport noop (reference redis), messageCount 1000 (reference 100000); no ratio to the reference for ${v.label}`);
    const burst = await runCli(['run', '-s', 'latency-burst', '-t', 'memory', '--message-count', '300', '--iterations', '1', '--warmup', '0', '--quiet', '--json', file]);
    expect(burst.code, burst.stderr).toBe(0);
    const rows = JSON.parse(readFileSync(file, 'utf8')).runs[0].variants as { seed?: unknown; ratios: { latencyP99VsSeed?: number }; seedSetupDiffers?: string }[];
    const seeded = rows.filter((x) => x.seed !== undefined);
    expect(seeded.length).toBeGreaterThan(0);
    for (const x of seeded) {
      expect(x.ratios.latencyP99VsSeed).toBeUndefined();
      expect(x.seedSetupDiffers).toBe('messageCount 300 (reference 15000)');
    }
  }, 60_000);

  it('a short run prints lines of at most 120 columns ending in a verdict, flags the short window, saves JSON and HTML by default and says where', async () => {
    const args = ['run', '-s', 'publish-overhead', '-t', 'noop', '--message-count', '2000', '--iterations', '1', '--warmup', '0', '--quiet'];
    // A directory of its own (through EVENTLANE_BENCH_RESULTS_DIR): other tests' CLIs save into RESULTS_DIR.
    const results = join(dir, 'results');
    const env = { EVENTLANE_BENCH_RESULTS_DIR: results };
    const r = await runCli(args, 120_000, env);
    expect(r.code, r.stderr).toBe(0);
    const lines = r.stdout.split('\n');
    expect(lines.filter((l) => l.length > 120)).toEqual([]);
    expect(r.stdout.replace(/\n {4}/g, ' ')).toMatch(/^verdict: publish\(\) x1000, awaited per group: [\d.]+K? events\/s, [\d.]+x the eventlane target \(issue 2\); higher is better$/m);
    expect(r.stdout).toContain('higher is better');
    expect(r.stdout.replace(/\n {4}/g, ' ')).toMatch(/^!!! short run: configurations measured for under 1 s per iteration: publish-overhead 3 of 3 \(shortest \d+ ms\)/m);
    const saved = lines.filter((l) => /^(saved:)? +\S/.test(l) && /\.(json|html)$/.test(l)).map((l) => l.replace(/^saved:/, '').trim());
    expect(saved).toHaveLength(2);
    expect(saved[0]).toMatch(/\d{4}-\d\d-\d\dT\d\d-\d\d-\d\dZ-publish-overhead\.json$/);
    expect(saved[1]).toBe(saved[0]!.replace(/json$/, 'html'));
    expect(saved.every((p) => p.startsWith(results))).toBe(true);
    expect(readdirSync(results).sort()).toEqual(saved.map((p) => basename(p)).sort());
    const report = JSON.parse(readFileSync(saved[0]!, 'utf8'));
    expect(report.notices).toEqual(expect.arrayContaining([expect.stringMatching(/^short run: .*: publish-overhead 3 of 3/)]));
    expect(readFileSync(saved[1]!, 'utf8')).toContain('class="verdict"');

    const quiet = await runCli([...args, '--no-save'], 120_000, env);
    expect(quiet.code, quiet.stderr).toBe(0);
    expect(quiet.stdout).not.toContain('saved:');
    expect(readdirSync(results)).toHaveLength(2);
  }, 120_000);

  it('a tiny noop run writes valid JSON whose throughput matches the events the transport counted', async () => {
    const file = join(dir, 'noop.json');
    const r = await runCli(['run', '--scenario', 'publish-overhead', '--transport', 'noop', '--message-count', '20000', '--iterations', '2', '--warmup', '0', '--quiet', '--json', file]);
    expect(r.code, r.stderr).toBe(0);
    const report = JSON.parse(readFileSync(file, 'utf8'));
    expect(report.schema).toBe('eventlane-benchmark/1');
    expect(report.environment.cores).toBeGreaterThan(0);
    expect(report.environment.node).toBe(process.versions.node);
    const run = report.runs[0];
    expect(run.scenario).toBe('publish-overhead');
    expect(run.variants.map((v: { id: string }) => v.id)).toEqual(['publish-groups', 'publish-many', 'concurrent']);
    for (const v of run.variants) {
      expect(v.iterations).toHaveLength(2);
      expect(v.delivery).toMatchObject({ sent: 40_000, received: 40_000, lost: 0, duplicated: 0, ok: true });
      for (const it of v.iterations) {
        // received is the noop transport's own counter of accepted events, independent of the harness
        expect(it.received).toBe(20_000);
        // durationMs is reported rounded to 1 us: agree to within that rounding, relatively
        expect(Math.abs(it.throughput - it.events / (it.durationMs / 1000)) / it.throughput).toBeLessThan(1e-3);
        expect(it.durationMs).toBeLessThan(r.wallMs);
        expect(it.peakRssMb).toBeGreaterThan(10);
        expect(it.pid).not.toBe(process.pid);
      }
      // each measured iteration ran in its own process
      expect(new Set(v.iterations.map((i: { pid: number }) => i.pid)).size).toBe(2);
      expect(v.summary.throughput.min).toBeLessThanOrEqual(v.summary.throughput.mean);
      expect(v.ratios.vsSeed).toBeGreaterThan(0);
    }
  }, 120_000);
});
