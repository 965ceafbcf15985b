/**
 * docs/writing-a-transport.md quotes the example transport's files whole and in order (code blocks marked
 * `ts file=<path>`), so the code the page shows is the code `npm test` runs: examples/my-queue/my-queue.test.ts
 * runs the conformance suite on it.
 */
import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { describe, expect, it } from 'vitest';

const root = resolve(__dirname, '../..');
const doc = readFileSync(resolve(root, 'docs/writing-a-transport.md'), 'utf8');
const blocks = [...doc.matchAll(/^```ts file=(\S+)\n([\s\S]*?)^```$/gm)].map((m) => ({ file: m[1]!, text: m[2]! }));
const FILES = ['examples/my-queue/my-queue.ts', 'examples/my-queue/my-queue.test.ts'];

describe('docs/writing-a-transport.md', () => {
  it.each(FILES)('quotes %s whole, in order, one blank line between its blocks', (file) => {
    const quoted = blocks.filter((b) => b.file === file).map((b) => b.text);
    expect(quoted.join('\n')).toBe(readFileSync(resolve(root, file), 'utf8'));
  });

  it('quotes no other file', () => {
    expect([...new Set(blocks.map((b) => b.file))].sort()).toEqual([...FILES].sort());
  });
});
