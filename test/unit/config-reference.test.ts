/**
 * docs/configuration.md is what the config schemas render (`npm run docs:config`), and every option in it has
 * a type, a default (or "required") and a description. eventlane takes at most `OPTION_LIMIT` (50) options,
 * counted as the page says: each name once across its tables, a transport block's `type` as `transport.type`,
 * `object` rows not at all.
 */
import { readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { configTables, OPTION_LIMIT, optionNames, renderConfigReference, renderTables, type SectionTable } from '../../scripts/config-reference/render.js';

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

/** The option names of a rendered page, read from its markdown alone: the count `optionNames` makes, made again. */
function namesOnPage(page: string): Set<string> {
  const names = new Set<string>();
  let transportBlock = false;
  for (const line of page.split('\n')) {
    if (line.startsWith('## ')) transportBlock = line.startsWith('## `transport: {');
    if (!line.startsWith('| `')) continue;
    const [, path, type] = line.split(/(?<!\\)\|/).map((c) => c.trim());
    if (type === 'object') continue;
    const name = path!.slice(1, -1);
    names.add(transportBlock && name === 'type' ? 'transport.type' : name);
  }
  return names;
}

describe('the option count', () => {
  const tables = configTables(root);
  const names = optionNames(tables);

  it(`is at most ${OPTION_LIMIT}: a value that can be derived from the others is not an option`, () => {
    expect(OPTION_LIMIT).toBeLessThanOrEqual(50);
    expect(names.length, `eventlane takes ${names.length} options, more than ${OPTION_LIMIT}: ${names.join(', ')}`).toBeLessThanOrEqual(OPTION_LIMIT);
  });

  it('is the count the page states, of the names its tables show', () => {
    const page = renderTables(tables);
    expect(page).toContain(`eventlane takes ${names.length} options in all:`);
    expect(namesOnPage(page)).toEqual(new Set(names));
  });

  it("counts each name once, a transport block's type as transport.type, and no object rows", () => {
    expect(new Set(names).size).toBe(names.length);
    expect(names).toContain('transport.type');
    expect(names).not.toContain('type');
    for (const group of ['transport', 'batching', 'retry', 'retry.backoff', 'cluster', 'cluster.options', 'redisOptions', 'pool', 'waitForReplicas']) expect(names).not.toContain(group);
    for (const option of ['events', 'logger', 'batching.maxEvents', 'retry.backoff.initialMs', 'topics', 'topics.*.maxLen', 'cluster.nodes', 'partitions', 'cpus']) expect(names).toContain(option);
  });

  it('fails past the limit: a transport block with options of new names raises the count by as many', () => {
    const row = (path: string) => ({ path, type: 'integer', default: '—', description: 'An option.' });
    const extra = Array.from({ length: OPTION_LIMIT + 1 - names.length }, (_, n) => row(`extra${n}`));
    const block: SectionTable = { title: "`transport: { type: 'extra' }`", intro: '', rows: [row('type'), row('partitions'), ...extra], removed: {} };
    const more = optionNames([...tables, block]);
    expect(more).toHaveLength(OPTION_LIMIT + 1);
    expect(namesOnPage(renderTables([...tables, block])).size).toBe(OPTION_LIMIT + 1);
  });
}, 60_000);
