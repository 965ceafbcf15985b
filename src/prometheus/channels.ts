/**
 * What the collector counts from eventlane's plain `diagnostics_channel`s (src/diagnostics.ts); it subscribes to
 * no tracing channel. Publish side: each unit of a write as it settles (`eventlane:batch`: events written or
 * failed, the write's time, the unit's size) and each publish refused before its events reached the batcher
 * (`eventlane:publish-error`). Consume side: each handler run's outcome and time (`eventlane:ack`, `retry`,
 * `dead-letter`). And Redis's reclaimed entries (`eventlane:reclaim`). The channels are the process's (this
 * thread's): every bus in it is counted, not only the buses the collector reads at scrape time.
 */
import dc from 'node:diagnostics_channel';
import type { BatchMessage, OutcomeMessage, PublishErrorMessage, ReclaimMessage } from '../diagnostics.js';
import type { Metrics } from './metrics.js';
import type { Tallies } from './tallies.js';

/** An eventlane error's `code`, else the error's name. */
function codeOf(err: unknown): string {
  const e = err as { code?: unknown; name?: unknown } | null;
  if (e !== null && typeof e === 'object') {
    if (typeof e.code === 'string' && e.code !== '') return e.code;
    if (typeof e.name === 'string' && e.name !== '') return e.name;
  }
  return 'unknown';
}

/** A unit settled: its events written or failed, its write's time, its size. */
function unitSettled(t: Tallies, msg: BatchMessage): void {
  const p = t.publishOf(msg.type);
  if (msg.written > 0) p.written += msg.written;
  if (msg.error !== undefined) p.fail(codeOf(msg.error), msg.events - msg.written);
  p.writes.observe(msg.writeMs / 1000);
  t.batches.observe(msg.events);
}

/** A handler run's outcome (`i`: its place in `OUTCOMES`), and its time when measured. */
function outcome(t: Tallies, i: number, msg: OutcomeMessage): void {
  const g = t.groupOf(msg.event.type, msg.context.group);
  g.outcomes[i]!++;
  if (msg.durationMs !== undefined) g.runs.observe(msg.durationMs / 1000);
}

/** Subscribes the collector to the channels; returns what unsubscribes it. */
export function subscribeChannels(m: Metrics): () => void {
  const t = m.tallies;
  const plain: [string, (msg: unknown) => void][] = [
    ['eventlane:ack', (msg) => outcome(t, 0, msg as OutcomeMessage)],
    ['eventlane:retry', (msg) => outcome(t, 1, msg as OutcomeMessage)],
    ['eventlane:dead-letter', (msg) => outcome(t, 2, msg as OutcomeMessage)],
    ['eventlane:batch', (msg) => unitSettled(t, msg as BatchMessage)],
    // A refused call counts its events; one with none (publishMany not given an array) counts one.
    ['eventlane:publish-error', (msg) => t.publishOf((msg as PublishErrorMessage).type).fail(codeOf((msg as PublishErrorMessage).error), Math.max(1, (msg as PublishErrorMessage).count))],
    ['eventlane:reclaim', (msg) => m.reclaimed.inc({ type: (msg as ReclaimMessage).type, group: (msg as ReclaimMessage).group }, (msg as ReclaimMessage).entries)],
  ];
  for (const [name, fn] of plain) dc.subscribe(name, fn);
  return () => {
    for (const [name, fn] of plain) dc.unsubscribe(name, fn);
  };
}
