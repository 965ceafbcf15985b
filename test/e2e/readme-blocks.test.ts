/**
 * The README's code blocks marked `ts runnable=<target>` run as pasted. Each is written to a file inside the
 * repository, where `eventlane` resolves to this package's build by its own name (the package's `exports`),
 * and run with tsx; it must exit 0 and print every line its `// prints: <line>` comments name. `memory` blocks
 * need nothing; `redis` blocks get a redis-server of the test harness through REDIS_URL (the README's block
 * reads it, defaulting to a local server).
 */
import { execFile } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, describe, expect, it } from 'vitest';
import { redisForFile } from '../integration/redis-common.js';

const root = resolve(__dirname, '../..');
const tsx = resolve(root, 'node_modules/.bin/tsx');
const TARGETS = ['memory', 'redis'] as const;
type Target = (typeof TARGETS)[number];

interface Block {
  target: Target;
  code: string;
  prints: string[];
}

/** Every fenced block whose info string is `ts runnable=<target>`, with the lines its `// prints:` comments expect. */
function runnableBlocks(markdown: string): Block[] {
  return [...markdown.matchAll(/^```ts runnable=(\S+)\n([\s\S]*?)^```$/gm)].map((m) => {
    const target = m[1] as Target;
    if (!TARGETS.includes(target)) throw new Error(`README block marked runnable=${target}: the targets are ${TARGETS.join(', ')}`);
    const code = m[2]!;
    const prints = [...code.matchAll(/\/\/ prints: (.+)$/gm)].map((p) => p[1]!.trim());
    return { target, code, prints };
  });
}

const blocks = runnableBlocks(readFileSync(resolve(root, 'README.md'), 'utf8'));
mkdirSync(resolve(root, 'tmp'), { recursive: true });
const dir = mkdtempSync(resolve(root, 'tmp/readme-blocks-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

async function run(block: Block, index: number, env: NodeJS.ProcessEnv): Promise<string> {
  const file = join(dir, `block-${index}.ts`);
  writeFileSync(file, block.code);
  const { stdout } = await promisify(execFile)(tsx, [file], { cwd: root, encoding: 'utf8', timeout: 60_000, env: { ...process.env, ...env } });
  return stdout;
}

describe('README runnable blocks', () => {
  it('has the in-process and the Redis quickstart, each naming what it prints', () => {
    expect(blocks.map((b) => b.target)).toEqual(['memory', 'redis']);
    for (const block of blocks) expect(block.prints.length).toBeGreaterThan(0);
  });

  it('switches the Redis block to Redis by its transport config only', () => {
    const [memory, redis] = blocks.map((b) => b.code.split('\n').filter((line) => !line.includes('transport:')));
    expect(redis).toEqual(memory);
  });

  /** [title, block, index] rows for it.each: `%s` prints the title unquoted. */
  const rows = (target: Target) => blocks.flatMap((block, index) => (block.target === target ? [[`README block ${index + 1}`, block, index] as const] : []));

  it.each(rows('memory'))('%s runs in-process and prints what it says', async (_, block, index) => {
    const out = await run(block, index, {});
    for (const line of block.prints) expect(out).toContain(line);
  });

  describe('against redis-server', () => {
    const r = redisForFile({ external: true });

    it.each(rows('redis'))('%s runs against Redis and prints what it says', async (_, block, index) => {
      const out = await run(block, index, { REDIS_URL: r.server.url });
      for (const line of block.prints) expect(out).toContain(line);
    });
  });
});
