/**
 * Every relative link in the README, docs/ and the transports' READMEs points at a file or folder that exists,
 * and a `#fragment` into a Markdown page names one of its headings (GitHub's anchors). Links inside code are
 * not links. External links (`https:`, `mailto:`) are not checked.
 */
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';

const root = resolve(__dirname, '../..');
const PAGES = [
  'README.md',
  'CONTRIBUTING.md',
  'transports/redis-streams/README.md',
  'transports/native/README.md',
  ...readdirSync(join(root, 'docs'))
    .filter((f) => f.endsWith('.md'))
    .map((f) => `docs/${f}`),
];

/** The page's text without fenced code blocks and inline code, where brackets are not links. */
function prose(markdown: string): string {
  return markdown.replace(/^```[\s\S]*?^```$/gm, '').replace(/`[^`\n]*`/g, '');
}

/** GitHub's anchor for each heading: lower case, punctuation dropped, spaces to hyphens, repeats numbered. */
function anchors(markdown: string): Set<string> {
  const seen = new Map<string, number>();
  const out = new Set<string>();
  for (const m of markdown.replace(/^```[\s\S]*?^```$/gm, '').matchAll(/^#{1,6} (.+)$/gm)) {
    const base = m[1]!
      .trim()
      .toLowerCase()
      .replace(/[^\p{L}\p{N}\s_-]/gu, '')
      .replace(/\s/g, '-');
    const n = seen.get(base) ?? 0;
    seen.set(base, n + 1);
    out.add(n === 0 ? base : `${base}-${n}`);
  }
  return out;
}

interface Link {
  page: string;
  target: string;
}

function relativeLinks(page: string): Link[] {
  const text = prose(readFileSync(join(root, page), 'utf8'));
  return [...text.matchAll(/\]\(([^)\s]+)(?:\s+"[^"]*")?\)/g)].map((m) => ({ page, target: m[1]! })).filter((l) => !/^[a-z][a-z0-9+.-]*:/i.test(l.target));
}

/** Why a link is broken, or undefined when it resolves. */
function broken({ page, target }: Link): string | undefined {
  const [path, fragment] = target.split('#') as [string, string | undefined];
  const file = path === '' ? join(root, page) : resolve(dirname(join(root, page)), decodeURIComponent(path));
  if (!existsSync(file)) return `${relative(root, file)} does not exist`;
  if (fragment === undefined || !file.endsWith('.md') || statSync(file).isDirectory()) return undefined;
  return anchors(readFileSync(file, 'utf8')).has(fragment) ? undefined : `${relative(root, file)} has no heading #${fragment}`;
}

describe('documentation links', () => {
  it('finds the pages and their links', () => {
    expect(PAGES).toContain('docs/README.md');
    expect(relativeLinks('README.md').length).toBeGreaterThan(10);
  });

  it.each(PAGES)('every relative link in %s resolves', (page) => {
    const failures = relativeLinks(page).flatMap((link) => {
      const why = broken(link);
      return why === undefined ? [] : [`${link.target}: ${why}`];
    });
    expect(failures).toEqual([]);
  });

  it('numbers repeated headings as GitHub does, and drops their punctuation', () => {
    expect([...anchors("# A\n## Raising a type's partition count\n## A\n```\n# not a heading\n```\n")]).toEqual(['a', 'raising-a-types-partition-count', 'a-1']);
  });
});
