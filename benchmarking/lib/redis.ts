/**
 * Redis helpers for the Redis scenarios and their baselines: a fail-fast connection, the server
 * version, and cleanup of a run's key prefix.
 */
import { Redis } from 'ioredis';
import { UsageError } from './config.js';

/** A connection that fails at once instead of retrying forever. */
export function connect(url: string, extra: Record<string, unknown> = {}): Redis {
  return new Redis(url, {
    lazyConnect: true,
    connectTimeout: 3000,
    maxRetriesPerRequest: 1,
    retryStrategy: () => null,
    enableOfflineQueue: true,
    ...extra,
  });
}

/** Connects and returns the server version; throws a one-line UsageError when Redis is unreachable. */
export async function redisVersion(url: string): Promise<string> {
  const r = connect(url);
  r.on('error', () => {});
  try {
    await r.connect();
    const info = await r.info('server');
    return /redis_version:([^\r\n]+)/.exec(info)?.[1] ?? 'unknown';
  } catch (err) {
    const msg = err instanceof Error ? err.message.split('\n')[0] : String(err);
    throw new UsageError(`Cannot reach Redis at ${url}: ${msg}`);
  } finally {
    r.disconnect();
  }
}

/**
 * Deletes every key under `prefix` with DEL, not UNLINK: the memory is free when this returns, not being
 * freed by a Redis background thread while the next iteration is measured. Returns how many.
 */
export async function deletePrefix(url: string, prefix: string): Promise<number> {
  const r = connect(url);
  r.on('error', () => {});
  let n = 0;
  try {
    await r.connect();
    let cursor = '0';
    do {
      const [next, keys] = await r.scan(cursor, 'MATCH', `${prefix}*`, 'COUNT', 1000);
      cursor = next;
      if (keys.length) n += await r.del(...keys);
    } while (cursor !== '0');
  } finally {
    r.disconnect();
  }
  return n;
}
