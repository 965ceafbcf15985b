/**
 * Typed event maps: `defineEvents({ name: zodSchema })` gives the types every bus method checks
 * against, plus the runtime schemas used to validate before anything is sent.
 */
import type { z } from 'zod';
import { defOf, type Def } from './codegen.js';
import { ConfigError } from './errors.js';

/** A map from event name to the zod schema of its payload. */
export type EventSchemas = Record<string, z.ZodType>;

/** The event map a bus is built from. Create it with {@link defineEvents}. */
export interface EventMap<S extends EventSchemas = EventSchemas> {
  readonly schemas: S;
  /** Event names, in declaration order. (Typed as string[]: `keyof S` here would make maps invariant.) */
  readonly names: readonly string[];
  /** Names whose schema cannot prove the payload JSON-encodable; these are encoded eagerly at publish. */
  readonly needsEncodeCheck: ReadonlySet<string>;
  /**
   * Names whose schema transforms values (`.transform()`, `z.preprocess`, `z.codec`): the parsed output
   * it publishes is not input it can check again, so consumers do not re-validate these.
   */
  readonly transforming: ReadonlySet<string>;
}

/**
 * Event names of a map. Written as a conditional type so the compiler prints a wrong name's error as the union
 * of declared names (`"order.created" | "user.signed-up"`), not as this alias over the zod schemas.
 */
export type EventName<M extends EventMap> = Extract<keyof M['schemas'], string>;
/** What `publish` accepts for an event (the schema's input type). */
export type EventInput<M extends EventMap, K extends EventName<M>> = z.input<M['schemas'][K]>;
/** What handlers receive for an event (the schema's output type). */
export type EventData<M extends EventMap, K extends EventName<M>> = z.output<M['schemas'][K]>;

const EVENT_NAME = /^[A-Za-z0-9][A-Za-z0-9._-]{0,199}$/;

/**
 * Declares the events a bus may carry.
 * @example
 * const events = defineEvents({
 *   'order.created': z.object({ orderId: z.string(), amount: z.number() }),
 * });
 */
export function defineEvents<const S extends EventSchemas>(schemas: S): EventMap<S> {
  if (schemas === null || typeof schemas !== 'object') {
    throw new ConfigError('defineEvents() expects an object of event name -> zod schema.');
  }
  const names = Object.keys(schemas);
  const needsEncodeCheck = new Set<string>();
  const transforming = new Set<string>();
  for (const name of names) {
    if (!EVENT_NAME.test(name)) {
      throw new ConfigError(`Event name "${name}" is invalid: use letters, digits, '.', '_' or '-' (at most 200 chars, no leading separator).`, [{ path: [name], message: 'invalid event name' }]);
    }
    const schema = schemas[name] as unknown as { safeParse?: unknown; _zod?: unknown };
    if (!schema || typeof schema.safeParse !== 'function' || !schema._zod) {
      throw new ConfigError(`Event "${name}" must map to a zod (v4) schema.`, [{ path: [name], message: 'not a zod schema' }]);
    }
    if (!isJsonSafe(schemas[name]!, new Set(), true)) needsEncodeCheck.add(name);
    if (hasTransform(schemas[name]!, new Set())) transforming.add(name);
  }
  return Object.freeze({ schemas, names: Object.freeze(names), needsEncodeCheck, transforming });
}

/**
 * zod's own string normalizers (`.trim()`, `.toLowerCase()`, `.toUpperCase()`, `.normalize()`): overwrites that
 * give the same value when applied again, so their output is still valid input. Known by their source text.
 */
const IDEMPOTENT_OVERWRITE = /^\(input\) => input\.(trim|toLowerCase|toUpperCase|normalize)\((form)?\)$/;

/**
 * Whether a schema holds a node that changes values, so that its output may not pass it again as input: a
 * transform (also inside `z.preprocess`), a codec, a pipe into a coercion, an `.overwrite()` other than zod's
 * idempotent string normalizers; inside `z.lazy` too.
 */
function hasTransform(schema: unknown, seen: Set<unknown>): boolean {
  if (seen.has(schema)) return false;
  seen.add(schema);
  const def = (schema as { _zod: { def: Record<string, unknown> } })._zod.def;
  if (changesValues(def)) return true;
  if (def.type === 'lazy' && typeof def.getter === 'function') return hasTransform((def.getter as () => unknown)(), seen);
  for (const v of Object.values(def)) {
    if (childSchemas(v).some((c) => hasTransform(c, seen))) return true;
  }
  return false;
}

/** Whether the node itself changes values (see `hasTransform`), not counting the schemas it holds. */
function changesValues(def: Record<string, unknown>): boolean {
  if (def.type === 'transform' || (def.type === 'pipe' && typeof def.transform === 'function')) return true;
  // A pipe into a coercion (`z.string().pipe(z.coerce.number())`): its output is not of its input's type. (A
  // coercion alone is not counted: `z.coerce.date()` is what a consumer should read a JSON date with.)
  if (def.type === 'pipe' && (def.out as { _zod?: { def: { coerce?: boolean } } })?._zod?.def.coerce === true) return true;
  return def.check === 'overwrite' && !IDEMPOTENT_OVERWRITE.test(String(def.tx));
}

const isSchema = (v: unknown): boolean => typeof v === 'object' && v !== null && '_zod' in v;

/** The schemas a node's field `v` holds: inner types, elements, options, an object's shape (its getters too). */
function childSchemas(v: unknown): unknown[] {
  return isSchema(v) ? [v] : Array.isArray(v) ? v.filter(isSchema) : typeof v === 'object' && v !== null ? Object.values(v).filter(isSchema) : [];
}

/** zod v4 def types whose parsed output always survives JSON.stringify → JSON.parse unchanged. */
const SAFE_LEAVES = new Set(['string', 'number', 'boolean', 'null', 'enum', 'literal', 'int', 'nan']);

/**
 * Whether every value the schema can output is JSON-encodable (no bigint, symbol, function, cycle,
 * Map/Set or arbitrary `unknown`). A `false` only means "check at publish time", never "reject".
 * `top`: the schema is the whole payload, where `undefined` (an `.optional()` there) encodes to nothing.
 */
function isJsonSafe(schema: z.ZodType, seen: Set<unknown>, top = false): boolean {
  // `seen` holds the schemas on the path from the root: a schema inside itself may describe cycles, one
  // used twice side by side (`{ from: Address, to: Address }`) is judged each time.
  if (seen.has(schema)) return false;
  seen.add(schema);
  try {
    return judgeJsonSafe(schema, seen, top);
  } finally {
    seen.delete(schema);
  }
}

/** Wrappers whose output is their inner schema's, or null. */
const SAFE_AS_INNER = new Set(['nullable', 'default', 'prefault', 'readonly', 'catch', 'nonoptional']);

function judgeJsonSafe(schema: z.ZodType, seen: Set<unknown>, top: boolean): boolean {
  const def = defOf(schema);
  const type: string = def.type;
  if (SAFE_LEAVES.has(type)) return type !== 'literal' || (def.values as unknown[]).every((v) => typeof v !== 'bigint' && v !== undefined);
  if (type === 'optional') return !top && isJsonSafe(def.innerType, seen);
  if (SAFE_AS_INNER.has(type)) return isJsonSafe(def.innerType, seen, top);
  return containerJsonSafe(type, def, seen, top);
}

/** `judgeJsonSafe` for the nodes that hold other schemas (and false for whatever else is left). */
function containerJsonSafe(type: string, def: Def, seen: Set<unknown>, top: boolean): boolean {
  switch (type) {
    case 'array':
      return isJsonSafe(def.element, seen);
    case 'object':
      // Unknown keys are stripped by default; passthrough/catchall keeps values we cannot vouch for.
      if (def.catchall && def.catchall._zod.def.type !== 'never') return false;
      return Object.values(def.shape as Record<string, z.ZodType>).every((s) => isJsonSafe(s, seen));
    case 'record':
      return isJsonSafe(def.valueType, seen);
    case 'tuple':
      return (def.items as z.ZodType[]).every((s) => isJsonSafe(s, seen)) && (!def.rest || isJsonSafe(def.rest, seen));
    case 'union':
      return (def.options as z.ZodType[]).every((s) => isJsonSafe(s, seen, top));
    case 'intersection':
      return isJsonSafe(def.left, seen, top) && isJsonSafe(def.right, seen, top);
    case 'pipe':
      return isJsonSafe(def.out, seen, top);
    default:
      return false; // date, bigint, any, unknown, map, set, custom, transform, lazy, ...
  }
}
