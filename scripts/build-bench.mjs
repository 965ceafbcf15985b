// Compiles the benchmark CLI with the library sources it measures into .bench-build/ (incremental tsc),
// so benchmark processes run plain compiled JavaScript, as a service would: no TypeScript loader in the
// measured processes' CPU profile or peak RSS. Then builds the benchmark-only addon (benchmarking/native, the
// machine-floor rows) when it is missing or older than its sources; when it cannot be built, the reason goes to
// FLOOR_UNBUILT, where the CLI reads it to say why it skips those rows, and the benchmark runs without them.
import { execFileSync } from 'node:child_process';
import { copyFileSync, existsSync, mkdirSync, readdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';

const out = '.bench-build';
const tsc = join('node_modules', 'typescript', 'bin', 'tsc');
execFileSync(process.execPath, [tsc, '-p', 'tsconfig.bench.json'], { stdio: 'inherit' });
writeFileSync(join(out, 'package.json'), JSON.stringify({ type: 'module', private: true }) + '\n');
const workers = join('benchmarking', 'workers');
mkdirSync(join(out, workers), { recursive: true });
for (const name of readdirSync(workers)) copyFileSync(join(workers, name), join(out, workers, name));

const FLOOR_DIR = join('benchmarking', 'native');
const FLOOR_NODE = join(FLOOR_DIR, 'build', 'Release', 'eventlane_floor.node');
// benchmarking/lib/floor-binding.ts reads the same file.
const FLOOR_UNBUILT = join(FLOOR_DIR, 'build', 'unbuilt.txt');

/** The sources the addon is built from: its own, and the partition core's headers it includes. */
function floorSources() {
  const own = readdirSync(FLOOR_DIR)
    .filter((f) => /\.(gyp|cc|h)$/.test(f))
    .map((f) => join(FLOOR_DIR, f));
  return [
    ...own,
    ...readdirSync(join('native', 'src'))
      .filter((f) => f.endsWith('.h'))
      .map((f) => join('native', 'src', f)),
  ];
}

/** Why the addon needs building (missing, or a source newer than it), or undefined when it is up to date. */
function floorStale() {
  if (!existsSync(FLOOR_NODE)) return 'not built';
  const built = statSync(FLOOR_NODE).mtimeMs;
  const newer = floorSources().find((f) => statSync(f).mtimeMs > built);
  return newer === undefined ? undefined : `older than ${newer}`;
}

/** Node's local headers, as scripts/native-prebuild.sh finds them: node-gyp is never left to download them. */
function localNodedir() {
  if (process.env.npm_config_nodedir) return process.env.npm_config_nodedir;
  const dirs = ['/usr', '/usr/local', dirname(dirname(process.execPath))];
  return dirs.find((d) => existsSync(join(d, 'include', 'node', 'node_api.h')));
}

/** The line of node-gyp's output that says why the build failed. */
function buildFailure(err) {
  const lines = `${err.stdout ?? ''}\n${err.stderr ?? ''}`
    .split('\n')
    .map((l) => l.trim())
    .filter(Boolean);
  const line = lines.find((l) => /\berror\b|not found|No such file/i.test(l) && !l.startsWith('gyp ERR!')) ?? lines.filter((l) => l.startsWith('gyp ERR! stack')).shift() ?? lines.pop();
  return (line ?? err.message).slice(0, 300);
}

function buildFloorAddon() {
  const stale = floorStale();
  if (stale === undefined) return;
  const nodedir = localNodedir();
  let why;
  if (nodedir === undefined) why = 'no local Node headers (include/node/node_api.h) to build it with';
  else {
    process.stderr.write(`benchmark: building the benchmark addon (${FLOOR_DIR}, ${stale})\n`);
    const gyp = join('node_modules', 'node-gyp', 'bin', 'node-gyp.js');
    try {
      execFileSync(process.execPath, [gyp, 'rebuild', '-C', FLOOR_DIR], { stdio: 'pipe', env: { ...process.env, npm_config_nodedir: nodedir } });
      return;
    } catch (err) {
      why = buildFailure(err);
    }
  }
  rmSync(FLOOR_NODE, { force: true });
  mkdirSync(dirname(FLOOR_UNBUILT), { recursive: true });
  writeFileSync(FLOOR_UNBUILT, `${why}\n`);
}

buildFloorAddon();
