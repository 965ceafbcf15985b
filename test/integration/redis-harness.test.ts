/**
 * The test harness itself: a redis-server it started does not outlive a test process that is killed
 * (SIGKILL: no 'exit' handler runs), so an aborted or timed-out run leaves no servers behind.
 */
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { expect, it } from 'vitest';
import { waitFor } from '../helpers/wait.js';

const FIXTURE = fileURLToPath(new URL('../helpers/fixtures/start-redis.ts', import.meta.url));

/** Whether `pid` is a live process (not gone, not a zombie waiting to be reaped). */
function alive(pid: number): boolean {
  try {
    return !/^\d+ \(.*\) Z/.test(readFileSync(`/proc/${pid}/stat`, 'utf8'));
  } catch {
    return false;
  }
}

it('a server started by a test process that is killed with SIGKILL dies with it', async () => {
  const child = spawn(process.execPath, ['--import', 'tsx', FIXTURE], { stdio: ['ignore', 'pipe', 'inherit'] });
  const pid = await new Promise<number>((resolve, reject) => {
    let out = '';
    child.stdout!.on('data', (d: Buffer) => {
      out += d.toString();
      if (out.includes('\n')) resolve(Number(out.trim()));
    });
    child.once('exit', (code) => reject(new Error(`fixture exited (${code}) before starting a server`)));
  });
  expect(pid).toBeGreaterThan(0);
  expect(readFileSync(`/proc/${pid}/comm`, 'utf8').trim()).toBe('redis-server');
  expect(alive(pid)).toBe(true);
  child.kill('SIGKILL');
  await waitFor(() => !alive(pid), 5_000, 'the orphaned redis-server to die');
}, 20_000);
