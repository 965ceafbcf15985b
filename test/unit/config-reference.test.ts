/**
 * docs/configuration.md is what the config schemas render (`npm run docs:config`), and every option in it has
 * a type, a default (or "required") and a description.
 */
import { readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { renderConfigReference } from '../../scripts/config-reference/render.js';

const root = resolve(import.meta.dirname, '../..');

describe('docs/configuration.md', () => {
  it('is what the schemas render: run `npm run docs:config` after changing an option', () => {
    const committed = readFileSync(join(root, 'docs/configuration.md'), 'utf8');
    expect(committed === renderConfigReference(root), 'docs/configuration.md is stale: run `npm run docs:config` and commit it').toBe(true);
  });

  it('describes every option, and names the options of every built-in transport', () => {
    const page = renderConfigReference(root);
    const rows = page.split('\n').filter((l) => l.startsWith('| `'));
    expect(rows.length).toBeGreaterThan(60);
    for (const row of rows) {
      const cells = row.split(/(?<!\\)\|/).map((c) => c.trim());
      expect(cells[4], row).not.toBe('');
    }
    for (const option of ['`batching.maxEvents`', '`retry.backoff.initialMs`', '`cluster.nodes`', '`capacity`', '`maxEventBytes`', '`prefetch`', '`workers`']) expect(page).toContain(`| ${option}`);
  });
}, 60_000);
