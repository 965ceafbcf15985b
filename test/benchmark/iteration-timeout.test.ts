/**
 * A hung iteration does not hang the run: its child process is killed after --iteration-timeout, the
 * variant is reported as failed with the reason, the other variants still run, and the CLI exits 1.
 * With --no-fork (iterations in the CLI's own process) the same limit applies with the same report: the
 * iteration is abandoned (it cannot be killed) and the CLI still exits once it has reported; a main
 * thread that never yields is ended by a watchdog process with the same error line.
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { alive, runCli } from './run-cli.js';
import { runInChild, runScenario } from '../../benchmarking/lib/runner.js';
import { GLOBAL_DEFAULTS } from '../../benchmarking/lib/config.js';
import type { Scenario } from '../../benchmarking/lib/types.js';

const dir = mkdtempSync(join(tmpdir(), 'eventlane-bench-timeout-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('iteration timeout', () => {
  it('kills an iteration that overruns --iteration-timeout and reports it as a failed iteration', async () => {
    const file = join(dir, 'timeout.json');
    // extreme-batching runs for --duration seconds: 60 s against a 2 s limit stands in for a hung child.
    const r = await runCli(
      [
        'run',
        '--scenario',
        'extreme-batching',
        '--transport',
        'noop',
        '--duration',
        '60',
        '--flush-interval',
        '1',
        '--publishers',
        '10',
        '--iterations',
        '1',
        '--warmup',
        '0',
        '--iteration-timeout',
        '2',
        '--quiet',
        '--json',
        file,
      ],
      50_000,
    );
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

  it('--no-fork: an iteration that never settles is abandoned after the limit, reported like a killed child, and the next variant runs', async () => {
    let hung = 0;
    const scenario: Scenario = {
      name: 'hang-test',
      title: 'hang',
      seed: 'none',
      description: 'one variant that never settles, one that does',
      transports: ['noop'],
      takes: [],
      defaults: {},
      quick: {},
      variants: (c) => [
        { id: 'hangs', label: 'hangs', kind: 'eventlane', runner: 'hang', config: c, params: {} },
        { id: 'fine', label: 'fine', kind: 'eventlane', runner: 'fine', config: c, params: {} },
      ],
      runners: {
        hang: () => {
          hung++;
          return new Promise(() => {});
        },
        fine: async ({ timed }) => {
          await timed(async () => {});
          return { events: 1, sent: 1, received: 1 };
        },
      },
    };
    const config = { ...GLOBAL_DEFAULTS, transport: 'noop' as const, iterations: 1, warmup: 1 };
    const t0 = performance.now();
    const r = await runScenario(scenario, config, new Set(), { fork: false, iterationTimeoutMs: 150 });
    expect(performance.now() - t0).toBeLessThan(5000);
    expect(hung).toBe(1);
    const [hangs, fine] = r.variants;
    // 1 warmup + 1 measured: 2 x 150 ms, as for a child
    expect(hangs!.error).toMatch(/^iteration timed out after 0\.3 s \(1 warmup \+ 1 measured\); /);
    expect(hangs!.error).toMatch(/--no-fork/);
    expect(hangs!.iterations).toHaveLength(0);
    expect(hangs!.delivery.ok).toBe(false);
    expect(fine!.error).toBeUndefined();
    expect(fine!.delivery).toMatchObject({ sent: 1, lost: 0, ok: true });
    expect(fine!.iterations[0]!.notes?.join(' ')).toMatch(/abandoned/);
  });

  it('--no-fork: the CLI reports the timed-out iteration and exits, though the abandoned one would run on', async () => {
    const file = join(dir, 'no-fork.json');
    // flush 1 ms, 10 publishers: the loop yields to timers, so the CLI's own timer fires at the limit.
    const r = await runCli(
      [
        'run',
        '--scenario',
        'extreme-batching',
        '--transport',
        'noop',
        '--duration',
        '60',
        '--flush-interval',
        '1',
        '--publishers',
        '10',
        '--iterations',
        '1',
        '--warmup',
        '0',
        '--iteration-timeout',
        '2',
        '--no-fork',
        '--quiet',
        '--json',
        file,
      ],
      50_000,
    );
    expect(r.wallMs).toBeLessThan(40_000);
    expect(r.code, r.stderr).toBe(1);
    expect(r.stdout).toMatch(/FAILED: iteration timed out after 2 s/);
    const v = JSON.parse(readFileSync(file, 'utf8')).runs[0].variants[0];
    expect(v.error).toMatch(/^iteration timed out after 2 s \(0 warmup \+ 1 measured\); .*--no-fork/);
    expect(v.delivery.ok).toBe(false);
    expect(v.iterations).toHaveLength(0);
  }, 60_000);

  it('--no-fork: a main thread that never yields is ended by the watchdog with the error line', async () => {
    // 1,000 publishers filling batches of 1,000 on noop: one unbroken microtask chain, no timer fires
    // until the loop ends (60 s).
    const r = await runCli(
      [
        'run',
        '--scenario',
        'extreme-batching',
        '--transport',
        'noop',
        '--duration',
        '60',
        '--flush-interval',
        '100',
        '--publishers',
        '1000',
        '--iterations',
        '1',
        '--warmup',
        '0',
        '--iteration-timeout',
        '1',
        '--no-fork',
        '--quiet',
      ],
      50_000,
    );
    expect(r.wallMs).toBeLessThan(30_000);
    expect(r.code).not.toBe(0);
    expect(r.stderr).toMatch(/^error: iteration timed out after 1 s \(0 warmup \+ 1 measured\); .*--no-fork/m);
  }, 60_000);

  it("a limit past setTimeout's range (a day per iteration, 30 warmups) does not fire at once", async () => {
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
