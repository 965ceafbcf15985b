/**
 * A dead-letter entry's fields (docs/wire-format.md, "Dead-letter entries") as a `RedisDeadLetter`: what
 * `deadLetters` lists and `eventlane-redis dlq` prints.
 */
import type { EventEnvelope } from '../../src/envelope.js';
import type { RedisDeadLetter } from './admin.js';
import { pairs } from './group-lag.js';

export function decodeDeadLetter(dlqId: string, fields: string[], type: string, partition: number): RedisDeadLetter {
  const f = pairs(fields) as Record<string, string | undefined>;
  let event: EventEnvelope | undefined;
  let raw: unknown;
  if (f['event'] !== undefined) {
    try {
      event = JSON.parse(f['event']) as EventEnvelope;
    } catch {
      raw = f['event'];
    }
  }
  if (f['raw'] !== undefined) {
    try {
      raw = JSON.parse(f['raw']);
    } catch {
      raw = f['raw'];
    }
  }
  return {
    id: event?.id ?? f['origin'] ?? dlqId,
    type: f['type'] ?? type,
    group: f['group'] ?? '',
    // The partition of the DLQ stream it was read from: replay and purge build their keys from it (trusting a
    // letter whose own field says another partition would replay it again on every run and never purge it).
    partition,
    attempts: Number(f['attempts'] ?? 0),
    error: f['error'] ?? '',
    event,
    raw,
    deadAt: Number(f['deadAt'] ?? 0),
    dlqId,
    ref: `${partition}/${dlqId}`,
    stream: f['stream'] ?? '',
    origin: f['origin'] ?? '',
  };
}
