/**
 * `bus.deadLetters()`'s reading and checking: reads a type's dead letters from the transport and checks each
 * stored event against the type's schema, whatever `validateOnConsume` says. A letter whose event is of the
 * type and valid comes back with `event.data` replaced by the schema's output (`valid: true`); any other is
 * marked `valid: false` with the issues found, the stored event kept as read (undecodable ones in `raw`).
 */
import { deadLettersOptionsSchema, parseConfig } from './config.js';
import type { InvalidDeadLetter, ValidDeadLetter } from './bus-types.js';
import type { EventEnvelope } from './envelope.js';
import { ConfigError, ValidationError } from './errors.js';
import type { DeadLetter, Transport } from './transport.js';
import { validated, type TypeState } from './type-plans.js';

/**
 * Dead letters of type `t` (optionally of one group), oldest first, at most `limit` (the transport's default when
 * unset), each checked. `trusted`: the type's schema transforms values, so the stored event (its output) is not
 * checked again. Throws a ConfigError for bad options or a transport that keeps no dead letters.
 */
export async function readDeadLetters(transport: Transport, t: TypeState, trusted: boolean, options: { group?: string; limit?: number }): Promise<(ValidDeadLetter<unknown> | InvalidDeadLetter)[]> {
  options = parseConfig(deadLettersOptionsSchema, options ?? {}, 'deadLetters options');
  if (!transport.deadLetters) throw new ConfigError(`The ${transport.type} transport keeps no dead letters.`);
  const letters = await transport.deadLetters(t.name, options.group, options.limit);
  return letters.map((letter) => checkedDeadLetter(t, trusted, letter));
}

/** A dead letter as `bus.deadLetters` returns it: `event.data` replaced by the schema's output, or marked invalid. */
function checkedDeadLetter(t: TypeState, trusted: boolean, letter: DeadLetter): ValidDeadLetter<unknown> | InvalidDeadLetter {
  const event = letter.event as EventEnvelope | null | undefined; // stored JSON: could be anything
  const invalid = (message: string): InvalidDeadLetter => ({ ...letter, valid: false, issues: [{ path: [], message, code: 'custom' }] });
  if (event === undefined) return invalid('the event could not be decoded (`raw` holds what was read)');
  if (event === null || typeof event !== 'object') return { ...invalid('the stored event is not an object (in `raw`)'), event: undefined, raw: letter.raw ?? event };
  if (event.type !== t.name || letter.type !== t.name) return invalid(`an event of type "${String(event.type)}", not "${t.name}"`);
  if (trusted) return { ...letter, valid: true, event };
  let data: unknown;
  try {
    data = validated(t, event.data, -1, event.id);
  } catch (err) {
    if (!(err instanceof ValidationError)) throw err;
    return { ...letter, valid: false, issues: err.issues };
  }
  return { ...letter, valid: true, event: { ...event, data } };
}
