/**
 * `bus.deadLetters()`'s reading and checking: reads a type's dead letters from the transport and checks each
 * stored event with the type's consumer-side check as `validateOnConsume` on gives it (src/consume-check.ts: the
 * version, the upcast of an older version, the schema). A letter whose event is of the type and passes comes back
 * with `event.data` replaced by the latest schema's output (`valid: true`); any other is marked `valid: false` with
 * the issues found, the stored event kept as read (undecodable ones in `raw`).
 */
import { deadLettersOptionsSchema, parseConfig } from './config.js';
import type { InvalidDeadLetter, ValidDeadLetter } from './bus-types.js';
import type { EventEnvelope } from './envelope.js';
import type { ConsumeCheck } from './consume-check.js';
import { ConfigError, ValidationError } from './errors.js';
import type { DeadLetter, Transport } from './transport.js';
import type { TypeState } from './type-plans.js';

/**
 * Dead letters of type `t` (optionally of one group), oldest first, at most `limit` (the transport's default when
 * unset), each checked by `check` (the type's `consumeCheck` with validation on). Throws a ConfigError for bad
 * options or a transport that keeps no dead letters.
 */
export async function readDeadLetters(
  transport: Transport,
  t: TypeState,
  check: ConsumeCheck | undefined,
  options: { group?: string; limit?: number },
): Promise<(ValidDeadLetter<unknown> | InvalidDeadLetter)[]> {
  options = parseConfig(deadLettersOptionsSchema, options ?? {}, 'deadLetters options');
  if (!transport.deadLetters) throw new ConfigError(`The ${transport.type} transport keeps no dead letters.`);
  const letters = await transport.deadLetters(t.name, options.group, options.limit);
  return letters.map((letter) => checkedDeadLetter(t, check, letter));
}

/** A dead letter as `bus.deadLetters` returns it: `event.data` replaced by the schema's output, or marked invalid. */
function checkedDeadLetter(t: TypeState, check: ConsumeCheck | undefined, letter: DeadLetter): ValidDeadLetter<unknown> | InvalidDeadLetter {
  const event = letter.event as EventEnvelope | null | undefined; // stored JSON: could be anything
  const invalid = (message: string): InvalidDeadLetter => ({ ...letter, valid: false, issues: [{ path: [], message, code: 'custom' }] });
  if (event === undefined) return invalid('the event could not be decoded (`raw` holds what was read)');
  if (event === null || typeof event !== 'object') return { ...invalid('the stored event is not an object (in `raw`)'), event: undefined, raw: letter.raw ?? event };
  if (event.type !== t.name || letter.type !== t.name) return invalid(`an event of type "${String(event.type)}", not "${t.name}"`);
  if (check === undefined) return { ...letter, valid: true, event };
  // The check replaces `data` (and the version header after an upcast) on a copy: `event` stays as read.
  const checked = { ...event };
  try {
    check(checked);
  } catch (err) {
    if (err instanceof ValidationError) return { ...letter, valid: false, issues: err.issues };
    return invalid((err as Error)?.message ?? String(err));
  }
  return { ...letter, valid: true, event: checked };
}
