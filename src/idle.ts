/**
 * `bus.idle()`'s wait: polls the transport's count of unfinished events for every consumer group the bus
 * subscribes to (those subscribed when the wait started and since) until it reads zero for all of them, with
 * nothing buffered in the bus, twice in a row a poll apart. Rejects with `ClosedError` when the bus closes
 * meanwhile, and with `TimeoutError` naming the groups still behind once the deadline has passed.
 */
import type { Batcher } from './batcher.js';
import type { Subscription } from './bus-types.js';
import { ClosedError, TimeoutError } from './errors.js';
import type { Transport } from './transport.js';

/** How often `idle()` asks the transport. */
const IDLE_POLL_MS = 5;

/** What the wait reads of the bus. `closed` says whether close() has been called. */
export interface IdleWatch {
  readonly transport: Transport;
  readonly batcher: Batcher;
  readonly subscriptions: ReadonlySet<Subscription>;
  readonly closed: () => boolean;
}

/**
 * Waits until the groups of `type` (every type when undefined) have finished every event written so far;
 * sends what the bus buffers first. The transport must count unfinished events (`Transport.unfinished`).
 */
export async function waitIdle(w: IdleWatch, type: string | undefined, timeoutMs: number): Promise<void> {
  const { transport, batcher } = w;
  await batcher.flushAll();
  const deadline = performance.now() + timeoutMs;
  // Twice in a row, a poll apart: a count read while an event moves between two places (a message to or
  // from a worker thread, a retry moving streams) cannot end the wait alone.
  let quiet = 0;
  // The groups to watch: those subscribed when it started and since (a subscription closing does not take its group off).
  const groups = new Map<string, [string, string]>();
  for (;;) {
    const pairs = watchedGroups(w.subscriptions, type, groups);
    // Events this bus still buffers (a handler's publish waiting out `batching.maxWaitMs`) are not finished.
    const buffered = batcher.pendingEvents;
    if (buffered > 0) void batcher.flushAll();
    const counts = await Promise.all(pairs.map(([type, group]) => transport.unfinished!(type, group)));
    // close() while waiting: what is left is dropped with an in-process transport, never finished.
    if (w.closed()) throw new ClosedError();
    if (buffered === 0 && counts.every((n) => n === 0)) {
      if (++quiet >= 2) return;
    } else quiet = 0;
    // Past the deadline after a quiet look, one more look decides (a timeoutMs of 0 on an idle bus resolves).
    if (performance.now() >= deadline && quiet === 0) throw timedOut(timeoutMs, pairs, counts, buffered);
    await new Promise((resolve) => setTimeout(resolve, IDLE_POLL_MS));
  }
}

/** Adds the groups of `type` subscribed now to `groups` (keyed by type and group); returns all of them. */
function watchedGroups(subscriptions: ReadonlySet<Subscription>, type: string | undefined, groups: Map<string, [string, string]>): [string, string][] {
  for (const s of subscriptions) if (type === undefined || s.type === type) groups.set(`${s.type}\0${s.group}`, [s.type, s.group]);
  return [...groups.values()];
}

function timedOut(timeoutMs: number, pairs: [string, string][], counts: number[], buffered: number): TimeoutError {
  const behind = pairs.flatMap(([type, group], i) => (counts[i]! > 0 ? [`"${type}" group "${group}": ${counts[i]}`] : []));
  if (buffered > 0) behind.push(`${buffered} published by this bus and not yet sent`);
  return new TimeoutError(`bus.idle() waited ${timeoutMs} ms (options.timeoutMs); events not finished yet: ${behind.join(', ')}.`);
}
