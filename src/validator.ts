/**
 * Schema-compiled payload validators. zod's `safeParse` allocates a result, a context and issue lists
 * per call; on the publish path that garbage is most of what a small event costs. `compileValidator`
 * generates, once per event type, a function that checks a payload and builds the same output zod
 * would (unknown keys stripped, fields in shape order), or returns {@link INVALID}. Modelled: objects
 * (strip/strict), strings with length bounds, finite numbers with `.int()` and `>`/`>=`/`<`/`<=` bounds,
 * booleans, null, enums, literals, arrays, optional, nullable.
 *
 * The compiled check only has to be sound when it accepts: whenever it is unsure (a failing value,
 * an `undefined` where zod might apply a default, an inherited key) it answers INVALID and the caller
 * asks zod, which decides and names the issues. Nodes it does not model (refinements, transforms,
 * string formats, unions, ...) are delegated to that node's own `safeParse`.
 */
import { z } from 'zod';
import { CodeGen, compiledOnce, defOf, hasProtoKey, type Def } from './codegen.js';

/** Returned by a compiled validator for "not proven valid: ask zod". */
export const INVALID: unique symbol = Symbol('eventlane.invalid');

export type Validator = (value: unknown) => unknown;

function subParse(schema: z.ZodType, v: unknown): unknown {
  let r;
  try {
    r = schema.safeParse(v);
  } catch {
    return INVALID; // async refinements, unmergeable intersections: zod throws, the caller reports it
  }
  return r.success ? r.data : INVALID;
}

function array(list: unknown, el: Validator): unknown {
  if (!Array.isArray(list)) return INVALID;
  const n = list.length;
  const out = new Array(n);
  for (let i = 0; i < n; i++) {
    const x = list[i];
    if (x === undefined) return INVALID; // holes and undefined: zod decides
    const y = el(x);
    if (y === INVALID) return INVALID;
    out[i] = y;
  }
  return out;
}

export const hasOwn = (o: object, k: string): boolean => Object.prototype.hasOwnProperty.call(o, k);

/**
 * An `.optional()` without checks of its own that passes `undefined` through as it is. Not
 * `.exactOptional()` (its inner schema judges `undefined`), nor one over a default or prefault (`optin`
 * "defaulted": the default replaces an absent value): those are delegated, and an undefined value or
 * absent key goes to zod.
 */
export function plainOptional(schema: z.ZodType): boolean {
  const zi = (schema as unknown as { _zod: { optin?: string; traits: Set<string> } })._zod;
  const def = defOf(schema);
  return def.type === 'optional' && !(def.checks?.length > 0) && zi.optin === 'optional' && !zi.traits.has('$ZodExactOptional');
}

type CheckDef = Def;

function checksOf(def: Def): CheckDef[] {
  return ((def.checks ?? []) as { _zod: { def: CheckDef } }[]).map((c) => c._zod.def);
}

/**
 * The condition a number node puts on `v`, for the checks modelled exactly (safe integer, `>`/`>=`/`<`/`<=`
 * with a number bound, no conditional `when`), or undefined (zod decides).
 */
function numberCondition(def: Def, v: string): string | undefined {
  if (def.coerce || (def.format !== undefined && def.format !== 'safeint')) return undefined;
  let int = def.format === 'safeint';
  const parts: string[] = [];
  for (const c of checksOf(def)) {
    if (c.when !== undefined) return undefined;
    if (c.check === 'number_format' && c.format === 'safeint') int = true;
    else if ((c.check === 'greater_than' || c.check === 'less_than') && typeof c.value === 'number' && Number.isFinite(c.value)) {
      parts.push(`${v} ${c.check === 'greater_than' ? '>' : '<'}${c.inclusive ? '=' : ''} ${c.value}`);
    } else return undefined;
  }
  return [int ? `Number.isSafeInteger(${v})` : `Number.isFinite(${v})`, ...parts].join(' && ');
}

/**
 * The condition zod puts on its length checks (`.min()`, `.max()`, `.length()`): "the value has a length", true
 * for every string. One function in zod's core, found here through a check of its own; a schema made by another
 * copy of zod has another, and its string bounds go to zod.
 */
const HAS_LENGTH: unknown = checksOf(defOf(z.string().max(1)))[0]?.when;

/**
 * Whether this zod counts a string's length in code points (zod 4.6: `'😀'` has length 1) rather than UTF-16
 * units (zod 4.1: 2), asked of zod itself. A string's UTF-16 length is at least its code points, so with code
 * points a `.length` bound passes what zod refuses only for `.min()` and `.length()`; those then hold
 * without a surrogate (or, for `.min(n)`, at 2n units or more), else the compiled check says "invalid" and
 * zod gives the verdict.
 */
const CODE_POINTS = z.string().length(1).safeParse('\u{1F600}').success;

/** The condition a string node puts on `v`: length bounds only (no format, no coerce, no transforms). */
function stringCondition(def: Def, v: string): string | undefined {
  if (def.coerce || def.format !== undefined) return undefined;
  const parts = [`typeof ${v} === 'string'`];
  for (const c of checksOf(def)) {
    if (c.when !== undefined && c.when !== HAS_LENGTH) return undefined;
    if (!lengthCondition(c, v, parts)) return undefined;
  }
  return parts.join(' && ');
}

/** Adds the condition of length check `c` on `v` to `parts`; false when `c` is not a length bound modelled exactly. */
function lengthCondition(c: CheckDef, v: string, parts: string[]): boolean {
  // With code points, a string without a surrogate has as many of them as UTF-16 units.
  const plain = `!/[\\uD800-\\uDFFF]/.test(${v})`;
  if (c.check === 'min_length' && Number.isInteger(c.minimum)) {
    const min = c.minimum as number;
    parts.push(`${v}.length >= ${min}`);
    if (CODE_POINTS && min > 0) parts.push(`(${v}.length >= ${2 * min} || ${plain})`);
  } else if (c.check === 'max_length' && Number.isInteger(c.maximum)) parts.push(`${v}.length <= ${c.maximum}`);
  else if (c.check === 'length_equals' && Number.isInteger(c.length)) {
    parts.push(`${v}.length === ${c.length}`);
    if (CODE_POINTS && (c.length as number) > 0) parts.push(plain);
  } else return false;
  return true;
}

/**
 * The condition a leaf node (string, number, boolean, null, enum, literal) puts on `v`, for the checks modelled
 * exactly; `constant(x)` names a value the condition refers to. Undefined when only zod can judge the node,
 * null when it is not a leaf.
 */
export function leafCondition(schema: z.ZodType, v: string, constant: (x: unknown) => string): string | undefined | null {
  const def = defOf(schema);
  const plain = !def.coerce && !(def.checks?.length > 0);
  switch (def.type) {
    case 'string':
      return stringCondition(def, v);
    case 'number':
      return numberCondition(def, v);
    case 'boolean':
      return plain ? `typeof ${v} === 'boolean'` : undefined;
    case 'null':
      return plain ? `${v} === null` : undefined;
    case 'enum':
    case 'literal': {
      const values = (schema as unknown as { _zod: { values?: Set<unknown> } })._zod.values;
      return values instanceof Set && plain ? `${constant(values)}.has(${v})` : undefined;
    }
    default:
      return null;
  }
}

/**
 * How an object node treats unknown keys, where compiled code models it: `strip` (dropped) or `strict`
 * (rejected); undefined for loose and catchall objects, and for a `__proto__` key: zod's own parse.
 */
export function objectMode(def: Def): 'strip' | 'strict' | undefined {
  if (hasProtoKey(def)) return undefined;
  return def.catchall === undefined ? 'strip' : defOf(def.catchall).type === 'never' ? 'strict' : undefined;
}

class ValidatorCompiler extends CodeGen<Validator> {
  private readonly consts: unknown[] = [];

  protected helpers(): Record<string, unknown> {
    return { X: INVALID, c: this.consts, p: subParse, a: array, own: hasOwn };
  }

  private constant(value: unknown): string {
    this.consts.push(value);
    return `c[${this.consts.length - 1}]`;
  }

  /** Delegates a node to its own `safeParse`. */
  private delegate(schema: z.ZodType, v: string): string {
    return `p(${this.constant(schema)}, ${v})`;
  }

  protected expr(schema: z.ZodType, v: string): string | undefined {
    const def = defOf(schema);
    const plain = !def.coerce && !(def.checks?.length > 0);
    const leaf = leafCondition(schema, v, (x) => this.constant(x));
    if (leaf !== null) return leaf === undefined ? this.delegate(schema, v) : `(${leaf} ? ${v} : X)`;
    switch (def.type) {
      case 'nullable':
      case 'optional':
        return this.nullish(schema, def, plain, v);
      case 'array': {
        const e = plain ? this.arrayExpr(def, v) : undefined;
        return e === undefined ? this.delegate(schema, v) : e;
      }
      case 'object': {
        const fn = plain ? this.object(def) : undefined;
        return fn === undefined ? this.delegate(schema, v) : `f[${fn}](${v})`;
      }
      default:
        return this.delegate(schema, v);
    }
  }

  /** A nullable or optional node: `v` itself when null (undefined), else its inner schema's check. */
  private nullish(schema: z.ZodType, def: Def, plain: boolean, v: string): string {
    // Refinements or overwrites on the node itself, and optionals that do not pass undefined through: zod.
    if (!plain || (def.type === 'optional' && !plainOptional(schema))) return this.delegate(schema, v);
    const inner = this.fn(def.innerType);
    const none = def.type === 'nullable' ? 'null' : 'undefined';
    return inner === undefined ? this.delegate(schema, v) : `(${v} === ${none} ? ${none} : f[${inner}](${v}))`;
  }

  private object(def: Def): number | undefined {
    const catchall = objectMode(def);
    if (catchall === undefined) return undefined;
    const entries = Object.entries(def.shape as Record<string, z.ZodType>);
    let body = "if (typeof v !== 'object' || v === null || Array.isArray(v)) return X;\n";
    if (catchall === 'strict') {
      const known = this.constant(new Set(entries.map(([k]) => k)));
      body += `for (var k in v) if (!${known}.has(k)) return X;\n`;
    }
    const fields: string[] = [];
    let optionals = false;
    entries.forEach(([key, schema], i) => {
      const k = JSON.stringify(key);
      const fd = defOf(schema);
      if (plainOptional(schema)) {
        optionals = true;
        const e = this.expr(fd.innerType, `v${i}`);
        // absent -> absent; own key holding undefined -> kept as undefined; inherited undefined -> zod decides
        body += `var v${i} = v[${k}], h${i} = true, r${i};\n`;
        body += `if (v${i} === undefined) { if (own(v, ${k})) r${i} = undefined; else if (${k} in v) return X; else h${i} = false; }\n`;
        body += `else { r${i} = ${e}; if (r${i} === X) return X; }\n`;
      } else {
        // undefined for a required field: zod may apply a default or reject; either way it decides
        body += `var v${i} = v[${k}]; if (v${i} === undefined) return X;\n`;
        body += `var r${i} = ${this.expr(schema, `v${i}`)}; if (r${i} === X) return X;\n`;
      }
      fields.push(k);
    });
    if (!optionals) {
      body += `return { ${fields.map((k, i) => `${k}: r${i}`).join(', ')} };`;
    } else {
      body += 'var o = {};\n';
      fields.forEach((k, i) => {
        body += plainOptional(entries[i]![1]) ? `if (h${i}) o[${k}] = r${i};\n` : `o[${k}] = r${i};\n`;
      });
      body += 'return o;';
    }
    return this.add(body);
  }
}

const validators = new WeakMap<z.ZodType, Validator | null>();

/**
 * A validator for `schema` that returns the parsed output, or INVALID when zod must decide (then call
 * `schema.safeParse` for the verdict and its issues). Undefined when code generation is unavailable.
 * Made once per schema object.
 */
export function compileValidator(schema: z.ZodType): Validator | undefined {
  return compiledOnce(validators, schema, () => new ValidatorCompiler().compile(schema));
}
