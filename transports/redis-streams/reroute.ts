/**
 * Where a Redis Streams subscription sends events it does not finish by handling them: the group's retry
 * stream of the partition (a failed event with attempts left, due after its backoff; each event of a
 * redelivered batch entry) and the partition's DLQ stream (XADD with the error, attempts, original id and
 * group; the raw fields of a malformed entry). Each call sends the XADDs and returns their promise; what
 * it did is logged once they succeeded (Deliveries may call it again after a failure).
 */
import type { EventEnvelope } from '../../src/envelope.js';
import { stringifyAnyDepth } from '../../src/deep-json.js';
import { describeError } from '../../src/errors.js';
import type { RetryVerdict } from '../../src/delivery-engine.js';
import type { DeadLetter } from '../../src/transport.js';
import { envelopeFields, fieldsToObject, WIRE_VERSION } from './codec.js';
import type { ConsumerContext, Entry } from './consumer-records.js';
import { dlqKey, retryKey } from './keys.js';

export class Reroute {
  constructor(private readonly ctx: ConsumerContext) {}

  /** Failed event `i` of `entry` gets another attempt (the engine's verdict): to the group's retry stream, due after its backoff. */
  retried(entry: Entry, i: number, next: RetryVerdict, err: unknown): Promise<unknown> {
    const s = this.ctx.streams[entry.stream]!;
    return this.retry(s.partition, entry.events[i]!, next.attempt, Date.now() + next.delayMs, entry.id, describeError(err));
  }

  /** Failed event `i` of `entry` is done with (the engine's verdict, which the bus logs): to the partition's DLQ. */
  deadLettered(entry: Entry, i: number, dl: DeadLetter): Promise<unknown> {
    const s = this.ctx.streams[entry.stream]!;
    const ev = entry.events[i]!;
    return this.deadLetter(s.partition, entry.id, s.key, dl.attempts, dl.error, ev, undefined);
  }

  /** A malformed entry: DLQ with the reason and the raw fields. */
  malformed(idx: number, id: string, fields: string[], reason: string): Promise<unknown> {
    const s = this.ctx.streams[idx]!;
    return this.deadLetter(s.partition, id, s.key, 1, reason, undefined, fieldsToObject(fields)).then(() =>
      this.ctx.logger.warn({ group: this.ctx.spec.group, stream: s.key, id, reason }, 'malformed entry dead-lettered'),
    );
  }

  /**
   * A whole entry (crash loop): every event to the DLQ. `written` (kept by the caller across calls) marks the
   * events whose write succeeded, so a call after a partial failure writes only the others.
   */
  crashLoop(idx: number, id: string, events: EventEnvelope[], attempts: number, reason: string, written = new Set<number>()): Promise<unknown> {
    const s = this.ctx.streams[idx]!;
    return eachOnce(events, written, (ev) => this.deadLetter(s.partition, id, s.key, attempts, reason, ev, undefined)).then(() =>
      this.ctx.logger.warn({ group: this.ctx.spec.group, stream: s.key, id, reason }, 'entry dead-lettered'),
    );
  }

  /**
   * A redelivered batch entry: a retry entry per event, due at once, so each is handled (and dead-lettered)
   * alone. `written` as for `crashLoop`.
   */
  split(idx: number, id: string, events: EventEnvelope[], attempt: number, written = new Set<number>()): Promise<unknown> {
    const s = this.ctx.streams[idx]!;
    return eachOnce(events, written, (ev) => this.retry(s.partition, ev, attempt, 0, id, 'redelivered: the consumer holding it died or timed out')).then(() =>
      this.ctx.logger.info({ group: this.ctx.spec.group, stream: s.key, id, events: events.length }, 'redelivered batch entry split into per-event retry entries'),
    );
  }

  private retry(partition: number, ev: EventEnvelope, attempt: number, due: number, origin: string, error: string): Promise<string> {
    const { config, spec } = this.ctx;
    const fields = envelopeFields(ev);
    fields.push('attempt', String(attempt), 'due', String(due), 'origin', origin, 'error', error);
    return this.ctx.cmd.xadd(retryKey(config.prefix, spec.type, partition, spec.group), '*', ...fields);
  }

  private deadLetter(partition: number, origin: string, stream: string, attempts: number, error: string, event: EventEnvelope | undefined, raw: Record<string, string> | undefined): Promise<unknown> {
    const { config, spec } = this.ctx;
    const fields: (string | number)[] = [
      'v',
      WIRE_VERSION,
      'kind',
      'dead',
      'group',
      spec.group,
      'type',
      spec.type,
      'partition',
      partition,
      'attempts',
      attempts,
      'error',
      error,
      'origin',
      origin,
      'stream',
      stream,
      'deadAt',
      Date.now(),
    ];
    // At any depth: an event another producer nested deeper than JSON.stringify recurses must not stay pending forever.
    if (event !== undefined) fields.push('event', stringifyAnyDepth(event));
    if (raw !== undefined) fields.push('raw', JSON.stringify(raw));
    const key = dlqKey(config.prefix, spec.type, partition);
    const trim = config.maxDeadLetters > 0 ? ['MAXLEN', '~', config.maxDeadLetters] : [];
    return this.ctx.cmd.xadd(key, ...trim, '*', ...fields);
  }
}

/** Writes each event not in `written` yet, marking those written; rejects if any write failed (after all settled). */
async function eachOnce(events: EventEnvelope[], written: Set<number>, write: (ev: EventEnvelope) => Promise<unknown>): Promise<void> {
  const results = await Promise.allSettled(events.map((ev, k) => (written.has(k) ? undefined : write(ev).then(() => void written.add(k)))));
  const failed = results.find((r): r is PromiseRejectedResult => r.status === 'rejected');
  if (failed) throw failed.reason;
}
