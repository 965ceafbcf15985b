/**
 * The code-generation base of the schema compilers (serializer, size bound, validator): one small
 * function per zod schema node, generated once per event type with `new Function` and wired together
 * through the `f` table.
 */
import type { z } from 'zod';

export type Def = Record<string, any>;

/** Wrapper nodes whose parsed output, once present, is the inner schema's (encoders and size bounds see through them). */
export const TRANSPARENT_WRAPPERS: ReadonlySet<string> = new Set(['default', 'prefault', 'readonly', 'nonoptional']);

/** The zod v4 definition of a schema node. */
export function defOf(schema: unknown): Def {
  return (schema as { _zod: { def: Def } })._zod.def;
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

  compile(schema: z.ZodType): F | undefined {
    const root = this.fn(schema);
    return root === undefined ? undefined : this.fns[root];
  }
}

