/**
 * Runs the benchmark CLI as a child process (node --import tsx benchmarking/cli.ts ...).
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll } from 'vitest';
import { RedisServer } from '../helpers/redis-server.js';

export const ROOT = fileURLToPath(new URL('../..', import.meta.url));

/**
 * Where the CLIs of this test file save their reports by default (EVENTLANE_BENCH_RESULTS_DIR): a temporary
 * directory, not the checkout's bench-results/; removed after the file.
 */
export const RESULTS_DIR = mkdtempSync(join(tmpdir(), 'eventlane-bench-results-'));
afterAll(() => rmSync(RESULTS_DIR, { recursive: true, force: true }));

export interface CliResult {
  code: number | null;
  stdout: string;
  stderr: string;
  wallMs: number;
}

/** `env`: variables added to this process's environment for the CLI (and its benchmark children). */
export function runCli(args: string[], timeoutMs = 120_000, env: Record<string, string> = {}): Promise<CliResult> {
  return new Promise((resolve, reject) => {
    const t0 = performance.now();
    const child = spawn(process.execPath, ['--import', 'tsx', 'benchmarking/cli.ts', ...args], {
      cwd: ROOT,
      stdio: ['ignore', 'pipe', 'pipe'],
      env: { ...process.env, EVENTLANE_BENCH_RESULTS_DIR: RESULTS_DIR, ...env },
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
    child.on('error', reject);
    child.on('close', (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr, wallMs: performance.now() - t0 });
    });
  });
}

/** A redis-server of its own and a temporary directory for the CLI's outputs, for one test file; both go after it. */
export function redisAndDirForFile(name: string): { server: () => RedisServer; dir: string } {
  let server: RedisServer | undefined;
  const dir = mkdtempSync(join(tmpdir(), `eventlane-bench-${name}-`));
  beforeAll(async () => {
    server = await RedisServer.start();
  });
  afterAll(async () => {
    await server?.stop();
    rmSync(dir, { recursive: true, force: true });
  });
  return { server: () => server!, dir };
}

/** Whether process `pid` still exists. */
export function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}
