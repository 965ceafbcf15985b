/**
 * What a native worker thread loads. Every consumer thread evaluates the modules its entry imports, in its
 * own heap: zod alone cost each thread ~4 MB of used heap (9.7 against 5.8 MB after import), and with it
 * each worker reached V8's first full GC during the sixth 15,000-event burst of a process (four at once in
 * latency-burst 4P/4C, their concurrent marking taking the CPUs the consumers needed). The worker's
 * runtime import graph must not reach zod (or the bus and its validators, which need it).
 */
import { readFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '../..');

/** Specifiers of the static runtime imports and re-exports of a TS source (`import type` and `export type` left out). */
function runtimeImports(source: string): string[] {
  const out: string[] = [];
  const re = /^\s*(?:import|export)\s+(?!type\b)(?:[^'";]*?\bfrom\s+)?['"]([^'"]+)['"]/gm;
  for (let m = re.exec(source); m !== null; m = re.exec(source)) out.push(m[1]!);
  return out;
}

/** Every module reachable from `entry` through static runtime imports: project files (relative) and packages. */
function importGraph(entry: string): { files: string[]; packages: string[] } {
  const files = new Set<string>();
  const packages = new Set<string>();
  const visit = (file: string): void => {
    if (files.has(file)) return;
    files.add(file);
    for (const spec of runtimeImports(readFileSync(file, 'utf8'))) {
      if (spec.startsWith('.')) visit(join(dirname(file), spec.replace(/\.js$/, '.ts')));
      else if (!spec.startsWith('node:')) packages.add(spec);
    }
  };
  visit(entry);
  return { files: [...files].map((f) => relative(root, f)).sort(), packages: [...packages].sort() };
}

describe('native worker thread imports', () => {
  it('the import scanner sees runtime imports and skips type-only ones', () => {
    const src = ["import { z } from 'zod';", "import type { X } from './x.js';", "export { a } from './a.js';", "export type { B } from './b.js';", "import './side.js';"].join('\n');
    expect(runtimeImports(src)).toEqual(['zod', './a.js', './side.js']);
    // It reaches zod from the bus (the scan is not vacuous).
    expect(importGraph(join(root, 'src/bus.ts')).packages).toContain('zod');
  });

  it('the worker entry reaches neither zod nor the bus', () => {
    const g = importGraph(join(root, 'transports/native/worker-main.ts'));
    expect(g.files).toContain('transports/native/consumer.ts');
    expect(g.packages).toEqual([]);
    expect(g.files).not.toContain('src/bus.ts');
    expect(g.files).not.toContain('src/validator.ts');
  });
});

describe('subscribe option cpus', () => {
  it('is checked without zod in the worker, and kept as a copy of the caller array', async () => {
    const { nativeSubscribeSchema } = await import('../../transports/native/config.js');
    const cpus = [1, 0];
    const parsed = nativeSubscribeSchema.parse({ cpus }) as { cpus?: number[] };
    cpus[0] = 7;
    expect(parsed.cpus).toEqual([1, 0]);
    for (const bad of [[], [-1], [1.5], [1024], 'x']) {
      const r = nativeSubscribeSchema.safeParse({ cpus: bad });
      expect(r.success).toBe(false);
      expect(r.error!.issues[0]!.path).toEqual(['cpus']);
    }
  });
});
