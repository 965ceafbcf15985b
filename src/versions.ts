/**
 * Versioned event types: `versioned(v1, { schema: v2, up }, ...)` declares the schemas an event type has had and
 * how a payload of each version becomes one of the next. It returns the latest schema (a copy of it, marked with
 * the versions), so the event map, `publish` and handlers see the latest version's input and output types, and
 * the bus compiles its publish plans from the latest schema as for any plain schema.
 *
 * The version travels with the event as the header `VERSION_HEADER` (its decimal string), written only for a
 * version above 1: an event without it is version 1. It always names the version of the payload beside it.
 */
import type { z } from 'zod';
import { ConfigError } from './errors.js';

/** The event header that carries the version of the payload (absent: version 1). */
export const VERSION_HEADER = 'eventlane-version';

/** Version `n + 1` of an event's payload: its schema, and how a payload of version `n` (its parsed output `P`) becomes its input. */
export interface VersionStep<P, S extends z.ZodType> {
  readonly schema: S;
  /** The parsed output of version `n` to input of this version. A throw dead-letters the event with the error. */
  readonly up: (previous: P) => z.input<S>;
}

/** The versions of an event type: `schemas[i]` is version `i + 1`; `ups[i]` takes version `i + 1`'s output to version `i + 2`'s input. */
export interface EventVersions {
  readonly schemas: readonly z.ZodType[];
  readonly ups: readonly ((previous: unknown) => unknown)[];
}

/** Where `versioned` keeps the versions on the schema it returns (found whichever copy of eventlane made it). */
const MARK = Symbol.for('eventlane.event.versions');

type Out<S extends z.ZodType> = z.output<S>;

/**
 * Declares the versions of an event type's payload, oldest first: version 1's schema, then each later version's
 * schema with `up`, the function from the previous version's parsed output to its input. Producers publish the
 * latest version; consumers receive every version as the latest (each payload checked against its own version's
 * schema, then upcast in order, then checked against the next). With only `v1` it is that schema, unchanged.
 * @example
 * 'order.created': versioned(
 *   z.object({ id: z.string(), total: z.number() }),
 *   { schema: z.object({ id: z.string(), total: z.object({ amount: z.number(), currency: z.string() }) }),
 *     up: (v1) => ({ id: v1.id, total: { amount: v1.total, currency: 'EUR' } }) },
 * ),
 */
export function versioned<A extends z.ZodType>(v1: A): A;
export function versioned<A extends z.ZodType, B extends z.ZodType>(v1: A, v2: VersionStep<Out<A>, B>): B;
export function versioned<A extends z.ZodType, B extends z.ZodType, C extends z.ZodType>(v1: A, v2: VersionStep<Out<A>, B>, v3: VersionStep<Out<B>, C>): C;
export function versioned<A extends z.ZodType, B extends z.ZodType, C extends z.ZodType, D extends z.ZodType>(
  v1: A,
  v2: VersionStep<Out<A>, B>,
  v3: VersionStep<Out<B>, C>,
  v4: VersionStep<Out<C>, D>,
): D;
export function versioned<A extends z.ZodType, B extends z.ZodType, C extends z.ZodType, D extends z.ZodType, E extends z.ZodType>(
  v1: A,
  v2: VersionStep<Out<A>, B>,
  v3: VersionStep<Out<B>, C>,
  v4: VersionStep<Out<C>, D>,
  v5: VersionStep<Out<D>, E>,
): E;
export function versioned<A extends z.ZodType, B extends z.ZodType, C extends z.ZodType, D extends z.ZodType, E extends z.ZodType, F extends z.ZodType>(
  v1: A,
  v2: VersionStep<Out<A>, B>,
  v3: VersionStep<Out<B>, C>,
  v4: VersionStep<Out<C>, D>,
  v5: VersionStep<Out<D>, E>,
  v6: VersionStep<Out<E>, F>,
): F;
/** More than six versions: typed loosely (`up` takes `unknown`). */
export function versioned(v1: z.ZodType, ...steps: VersionStep<unknown, z.ZodType>[]): z.ZodType;
export function versioned(v1: z.ZodType, ...steps: VersionStep<unknown, z.ZodType>[]): z.ZodType {
  if (!isZod(v1)) throw new ConfigError('versioned() expects a zod (v4) schema as version 1.', [{ path: [0], message: 'not a zod schema' }]);
  steps.forEach((step, i) => {
    if (step === null || typeof step !== 'object' || !isZod(step.schema) || typeof step.up !== 'function') {
      throw new ConfigError(`versioned(): version ${i + 2} must be { schema: <zod schema>, up: (previous) => next }.`, [{ path: [i + 1], message: 'not a version step' }]);
    }
  });
  if (steps.length === 0) return v1;
  const latest = steps[steps.length - 1]!.schema.clone();
  const versions: EventVersions = Object.freeze({ schemas: Object.freeze([v1, ...steps.map((s) => s.schema)]), ups: Object.freeze(steps.map((s) => s.up as (p: unknown) => unknown)) });
  Object.defineProperty(latest, MARK, { value: versions });
  return latest;
}

/** The versions `versioned` marked `schema` with; undefined for a plain schema (version 1 only). */
export function versionsOf(schema: unknown): EventVersions | undefined {
  return typeof schema === 'object' && schema !== null ? ((schema as Record<symbol, EventVersions | undefined>)[MARK] ?? undefined) : undefined;
}

/** The latest version of a schema: 1 for a plain one. */
export function latestVersion(schema: unknown): number {
  return versionsOf(schema)?.schemas.length ?? 1;
}

function isZod(s: unknown): s is z.ZodType {
  return typeof s === 'object' && s !== null && '_zod' in s && typeof (s as { safeParse?: unknown }).safeParse === 'function';
}
