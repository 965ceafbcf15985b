/**
 * Schema-compiled JSON encoders. For an event whose zod schema fixes the shape (objects of strings,
 * numbers, booleans, enums, literals, arrays, nullable/optional/default of those), `compileSerializer`
 * generates, once per event type, a function that writes exactly what `JSON.stringify` would for the
 * schema's parsed output, without walking the value generically. Any
 * other schema gets `undefined` and the bus falls back to `JSON.stringify`.
 *
 * Input must be the schema's *parsed output* (the bus serializes after validation), so a number is
 * finite and a string is a string. Strings of plain printable ASCII are quoted directly; anything
 * else goes through `JSON.stringify` for exact escaping.
 */
import type { z } from 'zod';
import { CodeGen, compiledOnce, defOf, enumValues, hasProtoKey, jsonLiteral, shapeFields, TRANSPARENT_WRAPPERS, type Def } from './codegen.js';

export type Serializer = (value: unknown) => string;

/** Text JSON.stringify writes as it is: printable ASCII without `"` and `\`. */
export const PLAIN = /^[\x20\x21\x23-\x5b\x5d-\x7e]*$/;

/** JSON for a string, skipping escape work for short plain-ASCII strings. */
function quote(s: string): string {
  return s.length <= 256 && PLAIN.test(s) ? '"' + s + '"' : JSON.stringify(s);
}

function num(n: number): string {
  return Number.isFinite(n) ? '' + n : 'null';
}

class Compiler extends CodeGen<Serializer> {
  protected helpers(): Record<string, unknown> {
    return { q: quote, n: num, a: array };
  }

  protected expr(schema: z.ZodType, v: string): string | undefined {
    const def = defOf(schema);
    if (TRANSPARENT_WRAPPERS.has(def.type)) return this.expr(def.innerType, v);
    switch (def.type) {
      case 'string':
        return `q(${v})`;
      case 'number':
        return `n(${v})`;
      case 'boolean':
        return `(${v} ? 'true' : 'false')`;
      case 'null':
        return `'null'`;
      case 'enum': // string values, or a TypeScript enum's numbers
        return enumValues(def).strings ? `q(${v})` : `JSON.stringify(${v})`;
      case 'literal':
        return jsonLiteral(def) ? `JSON.stringify(${v})` : undefined;
      case 'nullable': {
        const inner = this.fn(def.innerType);
        return inner === undefined ? undefined : `(${v} === null ? 'null' : f[${inner}](${v}))`;
      }
      case 'array':
        return this.arrayExpr(def, v);
      case 'object': {
        const fn = this.object(def);
        return fn === undefined ? undefined : `f[${fn}](${v})`;
      }
      default:
        return undefined;
    }
  }

  private object(def: Def): number | undefined {
    const fields = shapeFields(def);
    if (fields === undefined) return undefined;
    let body = "var s = '{';\n";
    for (const f of fields) {
      const access = `d[${JSON.stringify(f.key)}]`;
      const e = this.expr(f.schema, access);
      if (e === undefined) return undefined;
      const k = JSON.stringify(f.key);
      const bare = JSON.stringify(`${k}:`); // a JS literal of the JSON key text
      const comma = JSON.stringify(`,${k}:`);
      const sep = f.before === 'first' ? bare : f.before === 'after' ? comma : `(s.length > 1 ? ${comma} : ${bare})`;
      body += f.optional ? `if (${access} !== undefined) s += ${sep} + ${e};\n` : `s += ${sep} + ${e};\n`;
    }
    body += "return s + '}';";
    return this.add(`var d = v;\n${body}`);
  }
}

function array(list: unknown[], el: Serializer): string {
  if (list.length === 0) return '[]';
  let s = '[' + el(list[0]);
  for (let i = 1; i < list.length; i++) s += ',' + el(list[i]);
  return s + ']';
}

/**
 * Upper bounds on the UTF-8 byte length of the JSON of a schema's parsed output, compiled the same way:
 * a string counts 6 bytes per UTF-16 unit (the worst escape, `\u0000`), a number 24. Lets the bus
 * reject an oversized event at publish without encoding it, when the transport encodes later.
 */
/**
 * The bound is at most this many times the estimate, for every value: each term of the bound (6 per string
 * unit, 24 per number, constants) is at most 6x the estimate's term for it (1 per unit, 8, the same
 * constants). So an estimate below maxBytes / 6 proves the event small without computing the bound.
 */
export const BOUND_PER_ESTIMATE = 6;

class SizeCompiler extends CodeGen<(v: unknown) => number> {
  /**
   * `bound`: a true upper bound (6 bytes per string unit, 24 per number). `estimate`: the likely size of
   * ASCII-ish JSON (1 byte per string unit, 8 per number), cheap enough to size batches with.
   */
  constructor(private readonly mode: 'bound' | 'estimate' = 'bound') {
    super();
  }

  protected helpers(): Record<string, unknown> {
    return { a: sizeOfArray };
  }

  /** A string's quoted JSON: its length plus quotes, or 6 bytes per unit (`\u00XX`) for the bound. */
  private stringSize(v: string): string {
    return this.mode === 'bound' ? `(2 + 6 * ${v}.length)` : `(2 + ${v}.length)`;
  }

  protected expr(schema: z.ZodType, v: string): string | undefined {
    const def = defOf(schema);
    if (TRANSPARENT_WRAPPERS.has(def.type)) return this.expr(def.innerType, v);
    switch (def.type) {
      case 'enum':
        return this.enumSize(def, v);
      case 'string':
        return this.stringSize(v);
      case 'number':
        return this.mode === 'bound' ? '24' : '8';
      case 'boolean':
        return '5';
      case 'null':
        return '4';
      case 'literal':
        return String(Math.max(...(def.values as unknown[]).map((x) => Buffer.byteLength(JSON.stringify(x) ?? 'null'))));
      case 'nullable':
      case 'optional': {
        const inner = this.fn(def.innerType);
        return inner === undefined ? undefined : `(${v} == null ? 4 : f[${inner}](${v}))`;
      }
      case 'array':
        return this.arrayExpr(def, v);
      case 'object':
        return this.objectSize(def, v);
      default:
        return undefined;
    }
  }

  private enumSize(def: Def, v: string): string {
    const { values, strings } = enumValues(def);
    // A TypeScript enum's numbers (and strings): the longest value's JSON, known at compile time.
    if (!strings) return String(Math.max(...values.map((x) => Buffer.byteLength(JSON.stringify(x)) * (this.mode === 'bound' ? 6 : 1))));
    return this.stringSize(v);
  }

  /** Braces, then per field its quoted key, colon, comma and value; undefined for loose objects and a `__proto__` key. */
  private objectSize(def: Def, v: string): string | undefined {
    if ((def.catchall && def.catchall._zod.def.type !== 'never') || hasProtoKey(def)) return undefined;
    const parts = ['2'];
    for (const [key, field] of Object.entries(def.shape as Record<string, z.ZodType>)) {
      const e = this.expr(field, `d[${JSON.stringify(key)}]`);
      if (e === undefined) return undefined;
      parts.push(`${Buffer.byteLength(JSON.stringify(key)) + 2} + ${e}`);
    }
    const idx = this.add(`var d = v; return ${parts.join(' + ')};`);
    return `f[${idx}](${v})`;
  }
}

function sizeOfArray(list: unknown[], el: (v: unknown) => number): number {
  let n = 2;
  for (let i = 0; i < list.length; i++) n += el(list[i]) + 1;
  return n;
}

const sizeBounds = new WeakMap<z.ZodType, ((value: unknown) => number) | null>();
const sizeEstimates = new WeakMap<z.ZodType, ((value: unknown) => number) | null>();
const serializers = new WeakMap<z.ZodType, Serializer | null>();

/** An upper bound on the encoded size (bytes) of the parsed output of `schema`, or undefined. */
export function compileSizeBound(schema: z.ZodType): ((value: unknown) => number) | undefined {
  return compiledOnce(sizeBounds, schema, () => new SizeCompiler().compile(schema));
}

/**
 * An estimate of the encoded size (bytes) of the parsed output of `schema`, or undefined: what the bus
 * counts toward `batching.maxBytes` when the transport encodes at write time.
 */
export function compileSizeEstimate(schema: z.ZodType): ((value: unknown) => number) | undefined {
  return compiledOnce(sizeEstimates, schema, () => new SizeCompiler('estimate').compile(schema));
}

/** A fast encoder for the parsed output of `schema`, or undefined when only `JSON.stringify` will do. */
export function compileSerializer(schema: z.ZodType): Serializer | undefined {
  return compiledOnce(serializers, schema, () => new Compiler().compile(schema));
}

/** One encoder per event type: compiled where the schema allows, `JSON.stringify` otherwise. */
export function serializersFor(schemas: Record<string, z.ZodType>): Map<string, Serializer> {
  const out = new Map<string, Serializer>();
  for (const [name, schema] of Object.entries(schemas)) out.set(name, compileSerializer(schema) ?? jsonStringify);
  return out;
}

function jsonStringify(value: unknown): string {
  return JSON.stringify(value);
}
