// Compiles the benchmark CLI with the library sources it measures into .bench-build/ (incremental tsc),
// so benchmark processes run plain compiled JavaScript, as a service would: no TypeScript loader in the
// measured processes' CPU profile or peak RSS.
import { execFileSync } from 'node:child_process';
import { copyFileSync, mkdirSync, readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

const out = '.bench-build';
const tsc = join('node_modules', 'typescript', 'bin', 'tsc');
execFileSync(process.execPath, [tsc, '-p', 'tsconfig.bench.json'], { stdio: 'inherit' });
writeFileSync(join(out, 'package.json'), JSON.stringify({ type: 'module', private: true }) + '\n');
const workers = join('benchmarking', 'workers');
mkdirSync(join(out, workers), { recursive: true });
for (const name of readdirSync(workers)) copyFileSync(join(workers, name), join(out, workers, name));
