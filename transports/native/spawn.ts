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
  const req = createRequire(selfUrl);
  const api = pathToFileURL(req.resolve('tsx/esm/api').replace(/\.cjs$/, '.mjs')).href;
  const code = `import(${JSON.stringify(api)}).then((m) => { m.register(); return import(${JSON.stringify(entry.href)}); });`;
  return new Worker(code, { eval: true, workerData: init });
}
