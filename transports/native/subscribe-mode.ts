/**
 * How a native subscription consumes, read from its subscribe options and handler: on the main thread with
 * the handler function (`main`), or in worker threads running a handler module (`workers`, with the module
 * as a URL or package specifier). Options that mix the two, or name a module by a relative path, are a
 * ConfigError here, before any group is created.
 */
import type { z } from 'zod';
import { pathToFileURL } from 'node:url';
import { isAbsolute } from 'node:path';
import { parseTransportSubscribeOptions } from '../../src/config.js';
import { ConfigError } from '../../src/errors.js';
import type { DeliveryHandler, SubscriptionSpec } from '../../src/transport.js';
import { nativeSubscribeSchema } from './config.js';

/** The subscribe options, parsed. */
type SubscribeOptions = z.output<typeof nativeSubscribeSchema>;

export type SubscribeMode =
  | { readonly kind: 'main'; readonly handler: DeliveryHandler }
  | {
      readonly kind: 'workers';
      /** The handler module: a URL, or a bare specifier imported as a package. */
      readonly module: string;
      readonly workers: number;
      readonly workerData: unknown;
      readonly cpus: readonly number[] | undefined;
    };

export function subscribeMode(spec: SubscriptionSpec, handler: DeliveryHandler): SubscribeMode {
  const opts = parseTransportSubscribeOptions(nativeSubscribeSchema, spec.options, 'subscribe options (native transport)');
  const useWorkers = opts.workers !== undefined || opts.handler !== undefined;
  checkOptions(opts, useWorkers, handler);
  if (!useWorkers) return { kind: 'main', handler };
  return { kind: 'workers', module: moduleSpecifier(opts.handler!), workers: opts.workers ?? 1, workerData: opts.workerData, cpus: opts.cpus };
}

/** Throws the ConfigError for options that mix the two modes, or that name a handler module by a relative path. */
function checkOptions(opts: SubscribeOptions, useWorkers: boolean, handler: DeliveryHandler): void {
  if (useWorkers && opts.handler === undefined)
    throw new ConfigError('subscribe options: `workers` needs `handler` (a module URL or path).', [{ path: ['handler'], message: 'required with workers' }]);
  if (typeof opts.handler === 'string' && /^\.\.?[\\/]/.test(opts.handler)) {
    const message = `a relative path ("${opts.handler}") would resolve against eventlane's own folder: pass new URL('${opts.handler}', import.meta.url) or an absolute path`;
    throw new ConfigError(`subscribe options: handler: ${message}.`, [{ path: ['handler'], message }]);
  }
  if (useWorkers && typeof handler === 'function') {
    const message = 'a handler module runs in worker threads: pass it or a handler function, not both';
    throw new ConfigError(`subscribe options: handler: ${message}.`, [{ path: ['handler'], message }]);
  }
  if (!useWorkers && opts.cpus !== undefined)
    throw new ConfigError('subscribe options: `cpus` pins worker threads: it needs `workers` and `handler`.', [{ path: ['cpus'], message: 'only with workers' }]);
  if (!useWorkers && typeof handler !== 'function') throw new ConfigError('subscribe needs a handler function or options.handler.');
}

/** The handler module as the worker imports it: a URL, or (neither a URL nor an absolute path) a package specifier. */
function moduleSpecifier(handler: string | URL): string {
  return handler instanceof URL ? handler.href : isAbsolute(handler) ? pathToFileURL(handler).href : handler;
}
