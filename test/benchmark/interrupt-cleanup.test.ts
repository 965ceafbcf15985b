/**
 * Interrupting a Redis run (SIGINT, SIGTERM) kills the iteration's child and leaves none of the run's keys
 * (its streams under `eventlane-bench:<pid>-<time>:`) in Redis: the CLI deletes them, its own prefix only,
 * within a short bound, and then exits with 128 + the signal number.
 */
import { spawn } from 'node:child_process';
import { Redis } from 'ioredis';
import { describe, expect, it } from 'vitest';
import { waitFor } from '../helpers/wait.js';
import { redisAndDirForFile, ROOT } from './run-cli.js';

const { server } = redisAndDirForFile('interrupt');

async function keys(r: Redis, pattern: string): Promise<string[]> {
  const out: string[] = [];
  let cursor = '0';
  do {
    const [next, found] = await r.scan(cursor, 'MATCH', pattern, 'COUNT', 1000);
    cursor = next;
    out.push(...found);
  } while (cursor !== '0');
  return out;
}

describe('an interrupted Redis run', () => {
  for (const [signal, code] of [
    ['SIGINT', 130],
    ['SIGTERM', 143],
  ] as const) {
    it(`${signal}: deletes the run's own keys before it exits (${code})`, async () => {
      const r = new Redis(server().url);
      try {
        // Someone else's keys, under another run's prefix and outside the benchmark's: they stay.
        await r.set('eventlane-bench:someone-else:k', '1');
        await r.set('unrelated', '1');
        // ~10 s of events at 200/s: the run is writing when it is interrupted.
        const cli = spawn(
          process.execPath,
          [
            '--import',
            'tsx',
            'benchmarking/cli.ts',
            'run',
            '-s',
            'end-to-end',
            '-t',
            'redis',
            '--redis-url',
            server().url,
            '--message-count',
            '2000',
            '--rate',
            '200',
            '--iterations',
            '1',
            '--warmup',
            '0',
            '--quiet',
          ],
          { cwd: ROOT, stdio: ['ignore', 'ignore', 'pipe'] },
        );
        let stderr = '';
        cli.stderr!.on('data', (d: Buffer) => (stderr += d.toString()));
        const exited = new Promise<number | null>((resolve) => cli.on('close', (c) => resolve(c)));
        const mine = `eventlane-bench:${cli.pid}-*`;
        await waitFor(async () => (await keys(r, mine)).length > 0, 30_000, "the run's keys in Redis");
        const t0 = performance.now();
        cli.kill(signal);
        expect(await exited, stderr).toBe(code);
        expect(performance.now() - t0).toBeLessThan(5000);
        expect(await keys(r, mine)).toEqual([]);
        expect(stderr).toMatch(new RegExp(`^interrupted: deleted the run's \\d+ Redis key\\(s\\) under eventlane-bench:${cli.pid}-[0-9a-z]+:$`, 'm'));
        expect(await r.get('eventlane-bench:someone-else:k')).toBe('1');
        expect(await r.get('unrelated')).toBe('1');
      } finally {
        r.disconnect();
      }
    }, 60_000);
  }
});
