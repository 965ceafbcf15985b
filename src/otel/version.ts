/**
 * The package's version (`instrumentationVersion`), read once from eventlane's package.json: the nearest one
 * named `eventlane` above this module, from the sources and from either build.
 */
import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

// @ts-ignore import.meta is rewritten for the CommonJS build (scripts/build.mjs)
const selfUrl: string = import.meta.url;

let version: string | undefined;

/** eventlane's version; `0.0.0` where no package.json of eventlane is found (a bundle). */
export function packageVersion(): string {
  version ??= selfUrl.startsWith('file:') ? findVersion(dirname(fileURLToPath(selfUrl))) : '0.0.0';
  return version;
}

function findVersion(from: string): string {
  for (let dir = from; ; dir = dirname(dir)) {
    const found = readVersion(join(dir, 'package.json'));
    if (found !== undefined) return found;
    if (dirname(dir) === dir) return '0.0.0';
  }
}

function readVersion(file: string): string | undefined {
  try {
    const pkg = JSON.parse(readFileSync(file, 'utf8')) as { name?: unknown; version?: unknown };
    return pkg.name === 'eventlane' && typeof pkg.version === 'string' ? pkg.version : undefined;
  } catch {
    return undefined;
  }
}
