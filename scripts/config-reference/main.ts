/**
 * Writes docs/configuration.md (`npm run docs:config`), or with `--check` exits 1 when the committed page is
 * not what the schemas render. Either way it exits 1 when eventlane takes more than `OPTION_LIMIT` options.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { configTables, OPTION_LIMIT, optionNames, renderTables } from './render.js';

const root = resolve(import.meta.dirname, '../..');
const page = join(root, 'docs/configuration.md');
const tables = configTables(root);
const rendered = renderTables(tables);
const count = optionNames(tables).length;
if (process.argv.includes('--check')) {
  const committed = readFileSync(page, 'utf8');
  if (committed !== rendered) {
    console.error('docs/configuration.md is stale: run `npm run docs:config` and commit it.');
    process.exit(1);
  }
} else {
  writeFileSync(page, rendered);
  console.log(`wrote ${page}: ${count} options`);
}
if (count > OPTION_LIMIT) {
  console.error(`eventlane takes ${count} options, more than ${OPTION_LIMIT}: derive a value from the others instead of adding an option.`);
  process.exit(1);
}
