/**
 * A process often makes a bus after closing another (each benchmark iteration, a test, a serverless
 * invocation). Fields V8 takes for constants, rewritten by close() or by the first clock reading, would make it
 * throw away the optimized publish path of every later bus (see EventBus's constructor). This checks the fields'
 * kinds in V8 directly (`--allow-natives-syntax`, in a child process) on a freshly made bus.
 */
import { execFileSync } from 'node:child_process';
import { closeSync, mkdtempSync, openSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { RedisServer } from '../helpers/redis-server.js';

const fixture = fileURLToPath(new URL('./fixtures/field-shapes.ts', import.meta.url));

/**
 * The child's output. Its stdout is a file: %DebugPrint writes with C stdio, which drops output on the
 * non-blocking pipe Node makes of a piped stdout.
 */
function run(...args: string[]): string {
  const dir = mkdtempSync(join(tmpdir(), 'eventlane-shapes-'));
  const file = join(dir, 'out.txt');
  const fd = openSync(file, 'w');
  try {
    execFileSync(process.execPath, ['--allow-natives-syntax', '--import', 'tsx', fixture, ...args], { stdio: ['ignore', fd, 'inherit'], timeout: 60_000 });
    return readFileSync(file, 'utf8');
  } finally {
    closeSync(fd);
    rmSync(dir, { recursive: true, force: true });
  }
}

/** The own-property line of `field` in the %DebugPrint of the object whose prototype is a `cls`. */
function fieldLine(out: string, cls: string, field: string): string {
  const block = out.split('DebugPrint:').find((b) => b.includes(`- prototype: `) && new RegExp(`- prototype: \\S+ <${cls} map`).test(b)) ?? '';
  return block.split('\n').find((l) => l.includes(`#${field}:`)) ?? `no #${field} line for a ${cls} in:\n${out}`;
}

let redis: RedisServer | undefined;
afterAll(async () => redis?.stop());

describe('V8 field shapes of a new bus', () => {
  it.each(['memory', 'noop', 'redis-streams'])(
    '%s: lifecycle flags are not constants, the id clock keeps its shape',
    async (type) => {
      const args = [type];
      if (type === 'redis-streams') {
        redis ??= await RedisServer.start();
        args.push(redis.url);
      }
      const out = run(...args);
      const fields = [
        ['Batcher', 'closed'],
        ['EventBus', 'closing'],
        ...(type === 'redis-streams'
          ? [
              ['RedisStreamsTransport', 'closed'],
              ['RedisStreamsTransport', 'closing'],
            ]
          : []),
        ...(type === 'memory' ? [['MemoryTransport', 'closed']] : []),
      ];
      for (const [cls, field] of fields) {
        const label = `${cls}.${field}`;
        const line = fieldLine(out, cls!, field!);
        expect(line, label).toContain('data field');
        expect(line, label).not.toContain('const data field');
      }
      expect(out).toContain('ids-map same');
    },
    90_000,
  );
});
