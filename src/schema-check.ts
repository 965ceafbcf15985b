/**
 * Checking a payload against its event's schema, on publish and on consume: the compiled validator first
 * (validator.ts), zod where that is unsure, and a `ValidationError` naming zod's issues when the payload is
 * invalid. The consumer-side check built on it is src/consume-check.ts.
 */
import type { z } from 'zod';
import { formatIssues, toIssues } from './config.js';
import { ValidationError } from './errors.js';
import type { EventMap } from './events.js';
import { compileValidator, INVALID, type Validator } from './validator.js';

/** What a check needs of an event type: its name, its schema and the schema's compiled validator. */
export interface CheckedType {
  readonly name: string;
  readonly schema: z.ZodType;
  readonly validate: Validator;
}

/** The validator of a schema the compiler cannot model: every payload goes to zod. */
export const invalidAlways: Validator = () => INVALID;

/** The name, schema and compiled validator of event type `name` of `events`. */
export function checkedType(events: EventMap, name: string): CheckedType {
  const schema = events.schemas[name]!;
  return { name, schema, validate: compileValidator(schema) ?? invalidAlways };
}

/**
 * The parsed output of `data`: the compiled validator's, or zod's where it answers INVALID. Throws a
 * ValidationError naming zod's issues when the payload is invalid: a published one (`index` in a
 * publishMany call, or -1), or a consumed event (`eventId`). Nothing is allocated unless it fails.
 */
export function checkedData(t: CheckedType, data: unknown, index: number, eventId: string | undefined): unknown {
  const value = t.validate(data);
  if (value !== INVALID) return value;
  let parsed: ReturnType<z.ZodType['safeParse']>;
  try {
    parsed = t.schema.safeParse(data);
  } catch (err) {
    // zod throws instead of reporting for schemas it cannot run synchronously (async refinements) and
    // for intersections whose sides disagree.
    const message = `Schema of "${t.name}" could not validate ${eventId !== undefined ? `event ${eventId}` : 'the payload'}: ${(err as Error)?.message}`;
    throw new ValidationError(message, [{ path: [], message: String((err as Error)?.message), code: 'custom' }], { cause: err });
  }
  if (parsed.success) return parsed.data;
  // In a publishMany call, each issue's path starts with the payload's index, as zod's own for an array.
  const issues = index >= 0 ? toIssues(parsed.error).map((i) => ({ ...i, path: [index, ...i.path] })) : toIssues(parsed.error);
  const what = eventId !== undefined ? `Event ${eventId} of "${t.name}" does not match its schema` : `Invalid payload for "${t.name}"${index >= 0 ? ` (item ${index})` : ''}`;
  throw new ValidationError(`${what}: ${formatIssues(issues)}`, issues);
}
