// Builds dist/esm (ES modules + .d.ts) and dist/cjs (CommonJS + .d.ts) from the same sources.
// import.meta.url is rewritten in the CommonJS output, where it is a syntax error.
import { execFileSync } from 'node:child_process';
import { readdirSync, readFileSync, rmSync, writeFileSync, statSync } from 'node:fs';
import { join } from 'node:path';

const tsc = join('node_modules', 'typescript', 'bin', 'tsc');
rmSync('dist', { recursive: true, force: true });
execFileSync(process.execPath, [tsc, '-p', 'tsconfig.json'], { stdio: 'inherit' });
execFileSync(process.execPath, [tsc, '-p', 'tsconfig.cjs.json'], { stdio: 'inherit' });
writeFileSync('dist/esm/package.json', JSON.stringify({ type: 'module' }) + '\n');
writeFileSync('dist/cjs/package.json', JSON.stringify({ type: 'commonjs' }) + '\n');

function walk(dir) {
  for (const name of readdirSync(dir)) {
    const p = join(dir, name);
    if (statSync(p).isDirectory()) walk(p);
    else if (p.endsWith('.js')) {
      const src = readFileSync(p, 'utf8');
      if (src.includes('import.meta.url')) {
        writeFileSync(p, src.replaceAll('import.meta.url', 'require("node:url").pathToFileURL(__filename).href'));
      }
    }
  }
}
walk('dist/cjs');
console.log('built dist/esm and dist/cjs');
