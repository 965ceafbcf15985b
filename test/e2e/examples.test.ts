/** The README's quickstart runs as written. */
import { execFileSync } from 'node:child_process';
import { resolve } from 'node:path';
import { describe, expect, it } from 'vitest';

const root = resolve(__dirname, '../..');
const tsx = resolve(root, 'node_modules/.bin/tsx');

describe('examples', () => {
  it('quickstart publishes, rejects a bad payload, consumes 1000 events and closes', () => {
    const out = execFileSync(tsx, ['examples/quickstart.ts'], { cwd: root, encoding: 'utf8', timeout: 60_000 });
    expect(out).toContain('rejected before sending');
    expect(out).toContain('billing handled 1000 events; bus closed cleanly');
  });
});
