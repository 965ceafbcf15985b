/**
 * Writes docs/configuration.md (`npm run docs:config`), or with `--check` exits 1 when the committed page is
 * not what the schemas render.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { renderConfigReference } from './render.js';

const root = resolve(import.meta.dirname, '../..');
const page = join(root, 'docs/configuration.md');
const rendered = renderConfigReference(root);
if (process.argv.includes('--check')) {
  const committed = readFileSync(page, 'utf8');
  if (committed !== rendered) {
    console.error('docs/configuration.md is stale: run `npm run docs:config` and commit it.');
    process.exit(1);
  }
} else {
  writeFileSync(page, rendered);
  console.log(`wrote ${page}`);
}
