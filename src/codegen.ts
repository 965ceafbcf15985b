/**
 * The code-generation base of the schema compilers (serializer, size bound, validator): one small
 * function per zod schema node, generated once per event type with `new Function` and wired together
 * through the `f` table.
 */
import type { z } from 'zod';

/** A zod v4 node definition: zod's internals are untyped, and each compiler reads the fields of the node kinds it handles. */
// eslint-disable-next-line @typescript-eslint/no-explicit-any -- zod's internal definitions have no public type
export type Def = Record<string, any>;

/** Wrapper nodes whose parsed output, once present, is the inner schema's (encoders and size bounds see through them). */
export const TRANSPARENT_WRAPPERS: ReadonlySet<string> = new Set(['default', 'prefault', 'readonly', 'nonoptional']);

/** The values of a `z.enum` node, and whether all are strings (otherwise a TypeScript enum's numbers are among them). */
export function enumValues(def: Def): { values: unknown[]; strings: boolean } {
  const values = Object.values(def.entries as Record<string, unknown>);
  return { values, strings: values.every((x) => typeof x === 'string') };
}

/** Whether every value of a `z.literal` node is a JSON primitive (string, number, boolean, null). */
export function jsonLiteral(def: Def): boolean {
  return (def.values as unknown[]).every((x) => typeof x === 'string' || typeof x === 'number' || typeof x === 'boolean' || x === null);
}

/** The zod v4 definition of a schema node. */
export function defOf(schema: unknown): Def {
  return (schema as { _zod: { def: Def } })._zod.def;
}

/**
 * Whether an object schema declares a `__proto__` key. zod leaves it out of the parsed output (assigning
 * it would replace the output's prototype), where generated code would read the prototype as the field
 * or, in an object literal, set it: such objects are left to the generic paths.
 */
export function hasProtoKey(def: Def): boolean {
  return Object.prototype.hasOwnProperty.call(def.shape, '__proto__');
}

/** A field of an object schema, with what is known at compile time about the fields written before it. */
export interface ShapeField {
  readonly key: string;
  /** The field's schema (inside `.optional()` when optional). */
  readonly schema: z.ZodType;
  readonly optional: boolean;
  /** `first`: no field before it was written for sure; `after`: one was; `unknown`: only optional fields came before. */
  readonly before: 'first' | 'after' | 'unknown';
}

/**
 * The fields of an object schema in order, for encoders that write `{"a":..,"b":..}` and must know whether a
 * comma goes before a field; undefined when a catchall lets unknown keys through, or for a `__proto__` key
 * (see {@link hasProtoKey}).
 */
export function shapeFields(def: Def): ShapeField[] | undefined {
  if ((def.catchall && def.catchall._zod.def.type !== 'never') || hasProtoKey(def)) return undefined;
  const out: ShapeField[] = [];
  let first = true; // no field written yet for sure
  let certain = true; // `first` is known at compile time
  for (const [key, schema] of Object.entries(def.shape as Record<string, z.ZodType>)) {
    const inner = defOf(schema);
    const optional = inner.type === 'optional';
    out.push({ key, schema: optional ? inner.innerType : schema, optional, before: first && certain ? 'first' : certain ? 'after' : 'unknown' });
    if (!optional) {
      first = false;
      certain = true;
    } else if (first) certain = false;
  }
  return out;
}

/**
 * Generates one small function per schema node (`new Function`, once per event type) and wires them
 * together through the `f` table. Subclasses say what expression a schema node becomes.
 */
export abstract class CodeGen<F> {
  protected readonly fns: F[] = [];
  private readonly seen = new Set<unknown>();
  /** Parameters of the generated functions; `v` is the value. */
  protected readonly params: string = 'v';

  /** An expression computing the result for the JS expression `v`, or undefined if unsupported. */
  protected abstract expr(schema: z.ZodType, v: string): string | undefined;
  /** Names and values of the helpers the generated code may call (besides `f`). */
  protected abstract helpers(): Record<string, unknown>;

  /** Index of a compiled function for `schema`. */
  protected fn(schema: z.ZodType): number | undefined {
    if (this.seen.has(schema)) return undefined; // recursion: leave it to the generic path
    this.seen.add(schema);
    const e = this.expr(schema, 'v');
    this.seen.delete(schema);
    return e === undefined ? undefined : this.add(`return ${e};`);
  }

  protected add(body: string): number {
    const h = this.helpers();
    const factory = new Function(...Object.keys(h), 'f', `return function (${this.params}) {\n${body}\n};`) as (...args: unknown[]) => F;
    this.fns.push(factory(...Object.values(h), this.fns));
    return this.fns.length - 1;
  }

  /** `a(v, f[el])` over a compiled element function (helper `a` walks the array), or undefined. */
  protected arrayExpr(def: Def, v: string): string | undefined {
    const el = this.fn(def.element);
    return el === undefined ? undefined : `a(${v}, f[${el}])`;
  }

  /** The compiled function for `schema`, or undefined: unsupported nodes, or code generation disallowed. */
  compile(schema: z.ZodType): F | undefined {
    try {
      const root = this.fn(schema);
      return root === undefined ? undefined : this.fns[root];
    } catch {
      return undefined; // e.g. `new Function` forbidden (CSP, --disallow-code-generation-from-strings)
    }
  }
}

/**
 * `make()` once per schema object (per cache): buses built from the same event definitions share the
 * compiled functions, and with them what the JIT learnt, instead of compiling cold copies.
 */
export function compiledOnce<F>(cache: WeakMap<z.ZodType, F | null>, schema: z.ZodType, make: () => F | undefined): F | undefined {
  const hit = cache.get(schema);
  if (hit !== undefined) return hit ?? undefined;
  const f = make();
  cache.set(schema, f ?? null);
  return f;
}
