/**
 * Starts a consumer thread: the built `worker-main.js`, or, when running from TypeScript sources (tests,
 * tsx), `worker-main.ts` behind a bootstrap that registers tsx first. A `.ts` handler module gets the same.
 */
import { createRequire } from 'node:module';
import { pathToFileURL } from 'node:url';
import { Worker } from 'node:worker_threads';
import type { WorkerInit } from './worker-main.js';

// @ts-ignore import.meta is rewritten for the CommonJS build (scripts/build.mjs)
const selfUrl: string = import.meta.url;

export function spawnConsumerThread(init: WorkerInit, handlerModule: string): Worker {
  const fromSource = /\.[cm]?ts$/.test(selfUrl);
  const entry = new URL(fromSource ? './worker-main.ts' : './worker-main.js', selfUrl);
  if (!fromSource && !/\.[cm]?ts$/.test(handlerModule)) return new Worker(entry, { workerData: init });
  const api = tsxApi();
  // No tsx (a devDependency of ours, not installed with the package): the thread imports the .ts module
  // itself, which a Node that strips types can; elsewhere the load fails as a ConfigError naming handler
  // (worker-main says what would load it), instead of a raw MODULE_NOT_FOUND for tsx.
  if (api === undefined && !fromSource) return new Worker(entry, { workerData: init });
  if (api === undefined) throw new Error('tsx is needed to run eventlane from its TypeScript sources');
  const code = `import(${JSON.stringify(api)}).then((m) => { m.register(); return import(${JSON.stringify(entry.href)}); });`;
  return new Worker(code, { eval: true, workerData: init });
}

/** tsx's ESM API where tsx is installed, else undefined. */
function tsxApi(): string | undefined {
  try {
    return pathToFileURL(
      createRequire(selfUrl)
        .resolve('tsx/esm/api')
        .replace(/\.cjs$/, '.mjs'),
    ).href;
  } catch {
    return undefined;
  }
}
