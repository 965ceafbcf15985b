/**
 * The OS refusing the rings' memory (here under `ulimit -v`) is a typed error: the addon's std::bad_alloc must
 * not reach std::terminate and abort the whole process (SIGABRT, exit 134).
 */
import { execFileSync } from 'node:child_process';
import { resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { availableImplementation } from '../../native/loader.js';

const script = resolve(__dirname, 'fixtures/alloc-subscribe.mjs');

describe.skipIf(availableImplementation() !== 'native')('native rings the OS will not allocate', () => {
  it('subscribe rejects with NativeError naming the options that size them; the process and the bus go on', () => {
    // 2 GB of address space: Node starts, ~1,000 of the 4,096 rings fit.
    const out = execFileSync('bash', ['-c', `ulimit -v 2000000 && exec "${process.execPath}" "${script}"`], { cwd: resolve(__dirname, '../..'), encoding: 'utf8', timeout: 60_000 });
    const r = JSON.parse(out.trim().split('\n').at(-1)!);
    expect(r).toMatchObject({ name: 'NativeError', code: 'ERR_NATIVE' });
    expect(r.message).toMatch(/Cannot allocate the rings of group "huge": 4096 partition\(s\) x \d+ bytes .*lower transport\.partitions, capacity or maxEventBytes/);
    // Default rings: 16,384 slots of 24 bytes and a 4 MiB arena (four events of the default 1 MiB maxEventBytes).
    expect(r.message).toContain('4096 partition(s) x 4587520 bytes (17920 MiB)');
    expect(r.published).toBe(true);
  }, 90_000);
});
