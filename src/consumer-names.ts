/**
 * Consumer names in use in this process (this thread), per event type and group. Two subscriptions of one
 * group that shared a name would look like one consumer to the broker: on Redis each would drain and run
 * the other's pending entries at start, and their acks and keepalives would mix. The default name
 * (`service@host:pid`, with `/tN` in a worker thread) gets `#2`, `#3`... for the second, third subscription
 * of the same type and group; a name given twice is kept (the caller chose it) and warned about.
 */
import { hostname } from 'node:os';
import { threadId } from 'node:worker_threads';
import type { Logger } from './logger.js';

const inUse = new Map<string, Map<string, number>>();

export interface ConsumerName {
  readonly name: string;
  /** Gives the name back (at close, or when subscribing failed). Idempotent. */
  release(): void;
}

export function defaultConsumerName(service: string): string {
  return `${service}@${hostname()}:${process.pid}${threadId === 0 ? '' : `/t${threadId}`}`;
}

/** Takes a consumer name for a subscription of `type` in `group`: `given`, or the default made unique here. */
export function takeConsumerName(service: string, type: string, group: string, given: string | undefined, logger: Logger): ConsumerName {
  const key = `${type}\n${group}`;
  let names = inUse.get(key);
  if (names === undefined) inUse.set(key, (names = new Map()));
  let name: string;
  if (given !== undefined) {
    name = given;
    if (names.has(name))
      logger.warn({ type, group, consumer: name }, "two subscriptions of one group in this process share a consumer name: each may run the other's pending entries; give each its own");
  } else {
    const base = defaultConsumerName(service);
    name = base;
    for (let n = 2; names.has(name); n++) name = `${base}#${n}`;
  }
  names.set(name, (names.get(name) ?? 0) + 1);
  let released = false;
  return {
    name,
    release: () => {
      if (released) return;
      released = true;
      const left = names.get(name)! - 1;
      if (left > 0) names.set(name, left);
      else names.delete(name);
      if (names.size === 0 && inUse.get(key) === names) inUse.delete(key);
    },
  };
}
