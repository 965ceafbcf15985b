/**
 * The product addon holds the product only: the local build (native/build) and the shipped prebuilt binary
 * (prebuilds/) export the partition core and thread pinning, speak this loader's interface, and export no
 * benchmark instrument (`latencyFloor` is the benchmark addon's, benchmarking/native). The package ships none
 * of the benchmark addon's sources.
 */
import { execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { loadBinding } from '../../native/loader.js';

const root = fileURLToPath(new URL('../..', import.meta.url));
const req = createRequire(import.meta.url);
const local = join(root, 'native', 'build', 'Release', 'eventlane.node');

function expectProductExports(b: Record<string, unknown>): void {
  expect(b['abi']).toBe(loadBinding()!.abi);
  for (const name of ['Core', 'setThreadCpus', 'threadCpus']) expect(typeof b[name]).toBe('function');
  expect(b).not.toHaveProperty('latencyFloor');
}

describe('the product addon', () => {
  // CI runs npm run build:native first; npm run prebuildify:native leaves no local build behind.
  it.skipIf(!existsSync(local))('the local build (npm run build:native) exports no latencyFloor', () => {
    expectProductExports(req(local) as Record<string, unknown>);
  });

  it('the shipped prebuilt binary (prebuilds/) speaks this interface and exports no latencyFloor', () => {
    // The tests load the local build first: a prebuilt binary left over from older sources would only fail
    // for users, whose install has no build step.
    expectProductExports((req('node-gyp-build') as (dir: string) => Record<string, unknown>)(root));
  });

  it('the package ships none of the benchmark addon sources', () => {
    const out = execFileSync('npm', ['pack', '--dry-run', '--ignore-scripts', '--json'], { cwd: root, encoding: 'utf8' });
    const files = (JSON.parse(out.slice(out.indexOf('['))) as { files: { path: string }[] }[])[0]!.files.map((f) => f.path);
    expect(files).toContain('native/src/addon.cc');
    expect(files.filter((f) => f.startsWith('benchmarking/') || f.includes('latency-floor') || f.includes('floor.cc'))).toEqual([]);
  });
});
