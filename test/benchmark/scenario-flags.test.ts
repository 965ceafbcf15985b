/**
 * A run flag the scenario does not read (`Scenario.takes`) must not be accepted and written into the JSON
 * config as if it had been used (--message-size and --publishers on the latency scenarios, --publishers on
 * message-size, --consumers on partition-scaling, --duration off extreme-batching). `run` and `matrix`
 * refuse it before anything runs (one line naming the flag and the scenario, exit 2); `suite` applies each
 * flag to the scenarios that take it, runs the others without it (their config does not show it) and says so.
 */
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { resolveConfig } from '../../benchmarking/lib/config.js';
import { findScenario, SCENARIOS } from '../../benchmarking/scenarios/index.js';
import { runCli } from './run-cli.js';

const dir = mkdtempSync(join(tmpdir(), 'eventlane-bench-scenario-flags-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const SMALL = ['--iterations', '1', '--warmup', '0', '--quiet'];

/** The one stderr line of a refused command that ran nothing. */
async function refused(args: string[]): Promise<string> {
  const file = join(dir, `refused-${Math.random().toString(36).slice(2)}.json`);
  const r = await runCli([...args, ...SMALL, '--json', file]);
  expect(r.code, r.stdout + r.stderr).toBe(2);
  expect(r.stdout).toBe('');
  expect(existsSync(file)).toBe(false);
  const lines = r.stderr.split('\n').filter((l) => l.trim() && !l.startsWith('(run with --help'));
  expect(lines).toHaveLength(1);
  return lines[0]!;
}

describe('flags a scenario does not take', () => {
  it('run refuses them with one line naming the flags and the scenario, before anything runs', async () => {
    expect(await refused(['run', '-s', 'latency-burst', '-t', 'memory', '--message-count', '100', '--message-size', '64', '--publishers', '2'])).toMatch(
      /^error: --message-size, --publishers do not apply to scenario "latency-burst", which takes --message-count, --batch-size, --flush-interval, --partitions, --consumers/,
    );
    expect(await refused(['run', '-s', 'latency-sustained', '-t', 'memory', '--message-count', '100', '--publishers', '2'])).toMatch(/--publishers does not apply to scenario "latency-sustained"/);
    expect(await refused(['run', '-s', 'message-size', '-t', 'noop', '--message-count', '100', '--message-size', '64', '--publishers', '2'])).toMatch(
      /--publishers does not apply to scenario "message-size"/,
    );
    expect(await refused(['run', '-s', 'partition-scaling', '-t', 'memory', '--message-count', '10', '--partitions', '1', '--consumers', '2'])).toMatch(
      /--consumers does not apply to scenario "partition-scaling"/,
    );
    expect(await refused(['run', '-s', 'publish-overhead', '-t', 'noop', '--message-count', '100', '--duration', '1'])).toMatch(/--duration does not apply to scenario "publish-overhead"/);
    expect(await refused(['run', '-s', 'extreme-batching', '-t', 'noop', '--duration', '0.1', '--publishers', '2', '--flush-interval', '1', '--message-count', '100'])).toMatch(
      /--message-count does not apply to scenario "extreme-batching"/,
    );
  }, 60_000);

  it('run refuses --redis-url off the redis transport; suite leaves it out of those configs', async () => {
    expect(await refused(['run', '-s', 'latency-burst', '-t', 'native', '--redis-url', 'redis://127.0.0.1:6390'])).toMatch(
      /^error: --redis-url applies to the redis transport only; scenario "latency-burst" runs on native here, without Redis; nothing was run\./,
    );
    const memory = findScenario('message-size');
    expect(() => resolveConfig(memory, { transport: 'memory', redisUrl: 'redis://127.0.0.1:6390' })).toThrow(/--redis-url applies to the redis transport only/);
    expect(resolveConfig(memory, { transport: 'memory', redisUrl: 'redis://127.0.0.1:6390' }, { unused: 'drop' }).config.redisUrl).toBe('redis://127.0.0.1:6379');
    expect(resolveConfig(memory, { transport: 'redis', redisUrl: 'redis://127.0.0.1:6390' }).config.redisUrl).toBe('redis://127.0.0.1:6390');
  }, 30_000);

  it('matrix refuses a scenario that does not take what it sweeps', async () => {
    const line = await refused(['matrix', '-s', 'latency-burst', '-t', 'memory', '--message-count', '100', '--batch-sizes', '1', '--publisher-counts', '2', '--message-sizes', '64']);
    expect(line).toMatch(/^error: matrix sweeps .*scenario "latency-burst" does not take --message-size, --publishers/);
  }, 30_000);

  it('every scenario: a flag it takes is set, any other refused (run) or left out of its config (suite)', () => {
    const all = { messageCount: 123, messageSize: 77, batchSize: 9, flushInterval: 3, publishers: 5, consumers: 3, partitions: 2, rate: 700, duration: 0.7 } as const;
    for (const scenario of SCENARIOS) {
      const { config, explicit, dropped } = resolveConfig(scenario, { ...all, transport: scenario.transports[0] }, { unused: 'drop' });
      for (const [k, v] of Object.entries(all) as [keyof typeof all, number][]) {
        if (scenario.takes.includes(k)) {
          expect(config[k], `${scenario.name} ${k}`).toBe(v);
          expect(explicit.has(k)).toBe(true);
        } else {
          expect(config[k], `${scenario.name} ${k}`).not.toBe(v);
          expect(dropped).toContain(k);
          expect(() => resolveConfig(scenario, { [k]: v })).toThrow(new RegExp(`does not apply to scenario "${scenario.name}"`));
        }
      }
    }
    // the flags of the header comment, by name
    for (const [s, k] of [
      ['latency-burst', 'messageSize'],
      ['latency-burst', 'publishers'],
      ['latency-sustained', 'messageSize'],
      ['latency-sustained', 'publishers'],
      ['message-size', 'publishers'],
      ['partition-scaling', 'consumers'],
      ['publishing-throughput', 'duration'],
    ] as const) {
      expect(findScenario(s).takes, `${s} ${k}`).not.toContain(k);
    }
  });

  it('--help and list say which flags each scenario takes', async () => {
    const help = await runCli(['run', '--help']);
    expect(help.code).toBe(0);
    expect(help.stdout).toMatch(/`run` refuses a flag its scenario does not take/);
    expect(help.stdout).toContain('latency-burst          --message-count --batch-size --flush-interval --partitions --consumers');
    const list = await runCli(['list']);
    expect(list.stdout).toContain('takes: --duration --message-size --batch-size --flush-interval --publishers --partitions');
  });

  it('suite applies a flag where it is taken, runs the other scenarios without it, and says so', async () => {
    const file = join(dir, 'suite.json');
    const r = await runCli(['suite', '-t', 'memory', '--message-count', '300', '--duration', '0.2', '--publishers', '10', '--partitions', '1', '--consumers', '1', ...SMALL, '--json', file]);
    expect(r.code, r.stderr).toBe(0);
    const notes = r.stderr.replace(/\n {4}/g, ' '); // wrapped at 120 columns
    expect(notes).toMatch(/^note: --publishers applies to publish-overhead, extreme-batching, broker-throughput; .*latency-burst.* do not take it and run without it$/m);
    expect(notes).toMatch(/^note: --message-count applies to .*; extreme-batching does not take it and runs without it$/m);
    const runs = JSON.parse(readFileSync(file, 'utf8')).runs as { scenario: string; config: { publishers: number; duration: number; messageCount: number } }[];
    const cfg = (name: string) => runs.find((x) => x.scenario === name)!.config;
    expect(cfg('extreme-batching')).toMatchObject({ publishers: 10, duration: 0.2 });
    expect(cfg('extreme-batching').messageCount).not.toBe(300);
    expect(cfg('latency-burst').publishers).toBe(1);
    expect(cfg('latency-burst').messageCount).toBe(300);
    expect(cfg('message-size').publishers).toBe(1);
    expect(cfg('publish-overhead').duration).toBe(0);
  }, 120_000);
});
