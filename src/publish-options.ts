/**
 * Run-time checks of the options of `publish`, `tryPublish` and `publishMany` (TypeScript checks them at
 * compile time; JavaScript callers and `any` values get here): a wrong type or an unknown option is a
 * `ConfigError` naming it, before anything is sent. Nothing is checked when no options are passed. Written
 * out rather than a zod schema through `parseConfig`: a publish with `{ key }` per event checks them on the
 * hot path.
 */
import type { PublishOptions } from './envelope.js';
import { ConfigError } from './errors.js';

type Call = 'publish' | 'tryPublish' | 'publishMany';

/** What a wrong value is, for the message. */
const kind = (v: unknown): string => (v === null ? 'null' : typeof v);

function fail(call: Call, path: string[], message: string): never {
  throw new ConfigError(`${call} options: ${path.join('.')} ${message}.`, [{ path: ['options', ...path], message }]);
}

/** The headers' UTF-8 bytes (names and values); ConfigError when they are not a map of strings. */
function checkHeaders(call: Call, headers: unknown): number {
  if (headers === null || typeof headers !== 'object' || Array.isArray(headers)) fail(call, ['headers'], 'must be an object of string values');
  let bytes = 0;
  for (const name in headers) {
    const value = (headers as Record<string, unknown>)[name];
    if (typeof value !== 'string') fail(call, ['headers', name], `must be a string (got ${kind(value)})`);
    bytes += Buffer.byteLength(name) + Buffer.byteLength(value);
  }
  return bytes;
}

/** The key's UTF-8 bytes (none for a publishMany key function); ConfigError when it is neither a string nor, for publishMany, a function. */
function keyBytes(call: Call, value: unknown): number {
  if (typeof value !== 'string' && !(call === 'publishMany' && typeof value === 'function')) {
    fail(call, ['key'], call === 'publishMany' ? 'must be a string or a function returning one' : `must be a string (got ${kind(value)})`);
  }
  return typeof value === 'string' ? Buffer.byteLength(value) : 0;
}

/**
 * Throws ConfigError when `options` (not undefined) is not what `call` takes. Returns the UTF-8 bytes of its
 * strings (key, ids, header names and values), which count toward each event's `maxEventBytes`.
 */
export function checkPublishOptions(call: Call, options: object): number {
  if (options === null || typeof options !== 'object' || Array.isArray(options)) {
    throw new ConfigError(`${call} options must be an object.`, [{ path: ['options'], message: 'must be an object' }]);
  }
  // for-in, not Object.entries: no array per call (a publish with `{ key }` per event checks its options each time).
  let bytes = 0;
  for (const name in options) {
    const value = (options as Record<string, unknown>)[name];
    if (value === undefined) continue;
    switch (name) {
      case 'key':
        bytes += keyBytes(call, value);
        break;
      case 'correlationId':
      case 'causationId':
        if (typeof value !== 'string') fail(call, [name], `must be a string (got ${kind(value)})`);
        bytes += Buffer.byteLength(value);
        break;
      case 'headers':
        bytes += checkHeaders(call, value);
        break;
      case 'delayMs':
      case 'deliverAt':
        checkDue(call, name, value, options as PublishOptions);
        break;
      default:
        fail(call, [name], 'is not an option (key, correlationId, causationId, headers, delayMs, deliverAt)');
    }
  }
  return bytes;
}

/** ConfigError unless `value` is a valid `delayMs` or `deliverAt` of a call that may delay, and the only one of the two. */
function checkDue(call: Call, name: 'delayMs' | 'deliverAt', value: unknown, options: PublishOptions): void {
  if (call === 'tryPublish') fail(call, [name], 'is not taken by tryPublish (it writes now): use publish');
  if (options.delayMs !== undefined && options.deliverAt !== undefined) fail(call, [name], 'cannot be given with ' + (name === 'delayMs' ? 'deliverAt' : 'delayMs'));
  if (name === 'delayMs') {
    if (typeof value !== 'number' || !Number.isFinite(value) || value < 0) fail(call, [name], `must be a finite number of milliseconds, 0 or more (got ${String(value)})`);
    return;
  }
  const ms = value instanceof Date ? value.getTime() : typeof value === 'number' ? value : NaN;
  if (!Number.isFinite(ms) || ms < 0) fail(call, [name], `must be a valid Date or epoch milliseconds (got ${value instanceof Date ? 'an invalid Date' : kind(value)})`);
}

/**
 * The due time (epoch ms) of checked options that delay the event, or undefined when they do not. Called on
 * the options path only: an undelayed publish without options never reads it.
 */
export function dueAtOf(options: Pick<PublishOptions, 'delayMs' | 'deliverAt'>): number | undefined {
  const { delayMs, deliverAt } = options;
  if (delayMs !== undefined) return Date.now() + delayMs;
  if (deliverAt === undefined) return undefined;
  return deliverAt instanceof Date ? deliverAt.getTime() : deliverAt;
}

/** What a `publishMany` key function returned for payload `index`: a string or undefined, else ConfigError. */
export function checkedKey(key: unknown, index: number): string | undefined {
  if (key === undefined || typeof key === 'string') return key;
  const got = `returned ${kind(key)} for payload ${index}`;
  throw new ConfigError(`publishMany options: key ${got}; it must return a string or undefined.`, [{ path: ['options', 'key'], message: got }]);
}
