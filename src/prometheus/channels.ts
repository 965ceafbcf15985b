/**
 * What the collector counts from eventlane's `diagnostics_channel`s (src/diagnostics.ts): publish calls and
 * handler runs (tracing channels, timed from `start`, whose time is kept on the message), outcomes, units
 * handed to the transport and reclaimed entries. The channels are the process's (this thread's): every bus in
 * it is counted, not only the buses the collector reads at scrape time.
 */
import dc from 'node:diagnostics_channel';
import { performance } from 'node:perf_hooks';
import type { BatchMessage, OutcomeMessage, ProcessMessage, PublishMessage, ReclaimMessage } from '../diagnostics.js';
import type { Metrics } from './metrics.js';

/**
 * Where a traced call's start time is kept on its message (the channel's object, shared by every subscriber):
 * under a key of each collector's own, so that collectors on two registries each time and count every call.
 */
class Clock {
  private readonly key = Symbol('eventlane.prometheus.started');

  readonly start = (msg: object): void => {
    (msg as Record<symbol, number>)[this.key] = performance.now();
  };

  /** Seconds since `start` saw `msg`; undefined when it did not (the collector subscribed during the call). */
  elapsed(msg: object): number | undefined {
    const t0 = (msg as Record<symbol, number | undefined>)[this.key];
    return t0 === undefined ? undefined : (performance.now() - t0) / 1000;
  }
}

function isThenable(v: unknown): boolean {
  return v !== null && (typeof v === 'object' || typeof v === 'function') && typeof (v as { then?: unknown }).then === 'function';
}

/** An eventlane error's `code`, else the error's name. */
function codeOf(err: unknown): string {
  const e = err as { code?: unknown; name?: unknown } | null;
  if (e !== null && typeof e === 'object') {
    if (typeof e.code === 'string' && e.code !== '') return e.code;
    if (typeof e.name === 'string' && e.name !== '') return e.name;
  }
  return 'unknown';
}

/** A settled publish call: its time, and its events published or failed (a partial failure counts both). */
function published(m: Metrics, clock: Clock, msg: PublishMessage): void {
  const seconds = clock.elapsed(msg);
  if (seconds === undefined) return;
  m.publishDuration.observe({ type: msg.type }, seconds);
  if (msg.error === undefined) {
    m.published.inc({ type: msg.type }, msg.count);
    return;
  }
  const partial = msg.error as { code?: unknown; accepted?: unknown; failed?: unknown };
  const accepted = partial.code === 'ERR_PUBLISH_PARTIAL' && typeof partial.accepted === 'number' ? partial.accepted : 0;
  if (accepted > 0) m.published.inc({ type: msg.type }, accepted);
  m.publishFailures.inc({ type: msg.type, code: codeOf(msg.error) }, Math.max(1, msg.count - accepted));
}

/** A handler run ended: synchronously (`end`, its result no promise) or when its promise settled (`asyncEnd`). */
function handled(m: Metrics, clock: Clock, msg: ProcessMessage): void {
  const seconds = clock.elapsed(msg);
  if (seconds !== undefined) m.handlerDuration.observe({ type: msg.event.type, group: msg.context.group }, seconds);
}

/** Subscribes the collector to the channels; returns what unsubscribes it. */
export function subscribeChannels(m: Metrics): () => void {
  const clock = new Clock();
  const start = clock.start;
  const publish: dc.TracingChannelSubscribers<PublishMessage> = {
    start,
    // A call that threw synchronously ends with its error set; one that returned a promise settles at asyncEnd.
    end: (msg) => void (msg.error !== undefined && published(m, clock, msg)),
    asyncStart: () => undefined,
    asyncEnd: (msg) => published(m, clock, msg),
    error: () => undefined,
  };
  const process: dc.TracingChannelSubscribers<ProcessMessage & { result?: unknown }> = {
    start,
    end: (msg) => void (!isThenable(msg.result) && handled(m, clock, msg)),
    asyncStart: () => undefined,
    asyncEnd: (msg) => handled(m, clock, msg),
    error: () => undefined,
  };
  const outcome = (name: 'ack' | 'retry' | 'dead_letter') => (msg: unknown) => {
    const o = msg as OutcomeMessage;
    m.processed.inc({ type: o.event.type, group: o.context.group, outcome: name });
  };
  const plain: [string, (msg: unknown) => void][] = [
    ['eventlane:ack', outcome('ack')],
    ['eventlane:retry', outcome('retry')],
    ['eventlane:dead-letter', outcome('dead_letter')],
    ['eventlane:batch', (msg) => m.batchEvents.observe((msg as BatchMessage).events)],
    ['eventlane:reclaim', (msg) => m.reclaimed.inc({ type: (msg as ReclaimMessage).type, group: (msg as ReclaimMessage).group }, (msg as ReclaimMessage).entries)],
  ];
  const publishChannel = dc.tracingChannel<'eventlane:publish', PublishMessage>('eventlane:publish');
  const processChannel = dc.tracingChannel<'eventlane:process', ProcessMessage & { result?: unknown }>('eventlane:process');
  publishChannel.subscribe(publish);
  processChannel.subscribe(process);
  for (const [name, fn] of plain) dc.subscribe(name, fn);
  return () => {
    publishChannel.unsubscribe(publish);
    processChannel.unsubscribe(process);
    for (const [name, fn] of plain) dc.unsubscribe(name, fn);
  };
}
