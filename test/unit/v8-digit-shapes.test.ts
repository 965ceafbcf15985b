/**
 * The JSON writer and reader keep their optimized code when a number of a new shape comes (see
 * fixtures/digit-shapes.ts): a deopt there is a recompile on a V8 helper thread, which on a machine with few
 * cores stalls the publisher or the consumer.
 */
import { execFileSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const fixture = fileURLToPath(new URL('./fixtures/digit-shapes.ts', import.meta.url));

describe('V8: JSON writer and reader across digit counts', () => {
  it('no deopt when ids of other digit counts (and 0) follow a long run of 5-digit ones', () => {
    const out = execFileSync(process.execPath, ['--trace-deopt', '--import', 'tsx', fixture], { encoding: 'utf8', timeout: 60_000, maxBuffer: 64 * 1024 * 1024 });
    expect(out).toContain('### done');
    const after = out.slice(out.indexOf('### other digits'));
    const deopts = after.split('\n').filter((l) => l.includes('bailout') || l.includes('deoptimiz'));
    expect(deopts).toEqual([]);
  }, 60_000);
});
