/**
 * Schema-compiled JSON readers: the consuming side of `json-writer.ts`. For a payload schema that fixes
 * the shape (objects of strings, numbers, booleans, enums, literals, arrays, nullable/optional/default of
 * those), `readerPlan` describes the JSON text the writers produce, and `compileJsonReader` generates a
 * parser for exactly that text: keys in schema order, no whitespace, plain strings (no escapes), numbers of
 * at most 15 significant digits without an exponent. It reads a record in place inside a larger string
 * (a popped batch), so no substring is made first.
 *
 * The result always equals `JSON.parse(text.slice(start, end))`: any text outside that narrow form (written
 * by someone else, reordered keys, whitespace, escapes, long or exponent numbers, extra keys, or not JSON at
 * all) is handed to `JSON.parse` whole, which returns or throws what it always does. Numbers are exact: a
 * decimal of at most 15 significant digits m with k <= 15 digits after the point is m / 10^k, both exactly
 * representable doubles, and IEEE division rounds their quotient correctly, as JSON.parse does.
 *
 * A plan is plain data (structured-cloneable), so worker threads compile the same reader from it.
 */
import type { z } from 'zod';
import { defOf, enumValues, jsonLiteral, shapeFields, TRANSPARENT_WRAPPERS, type Def } from './codegen.js';

/** What the JSON of a schema's parsed output looks like, as far as the reader needs to know. */
export type ReaderPlan =
  | { readonly t: 'string' | 'number' | 'boolean' | 'null' | 'primitive' }
  | { readonly t: 'nullable' | 'array'; readonly of: ReaderPlan }
  | { readonly t: 'object'; readonly fields: readonly { readonly key: string; readonly optional: boolean; readonly of: ReaderPlan }[] };

/** Parses `text.slice(start, end)` as JSON (exactly as JSON.parse does, throwing what it throws). */
export type JsonReader = (text: string, start: number, end: number) => unknown;

/** The plan of a schema's JSON, or undefined when the schema is not one the reader handles (JSON.parse it). */
export function readerPlan(schema: z.ZodType, seen = new Set<unknown>()): ReaderPlan | undefined {
  if (seen.has(schema)) return undefined; // recursive schemas: generic path
  const def: Def = defOf(schema);
  if (TRANSPARENT_WRAPPERS.has(def.type)) return readerPlan(def.innerType, seen);
  switch (def.type) {
    case 'string':
    case 'number':
    case 'boolean':
    case 'null':
      return { t: def.type };
    case 'enum':
      return { t: enumValues(def).strings ? 'string' : 'primitive' };
    case 'literal':
      return jsonLiteral(def) ? { t: 'primitive' } : undefined;
    case 'nullable':
    case 'array':
      return nestedPlan(schema, def, seen);
    case 'object':
      return objectPlan(schema, def, seen);
    default:
      return undefined;
  }
}

/** The plan of a nullable or array node: its inner schema's or element's plan, inside. */
function nestedPlan(schema: z.ZodType, def: Def, seen: Set<unknown>): ReaderPlan | undefined {
  seen.add(schema);
  const of = readerPlan(def.type === 'array' ? def.element : def.innerType, seen);
  seen.delete(schema);
  return of === undefined ? undefined : { t: def.type, of };
}

/** The plan of an object node: its fields' plans, in the order the writers write them. */
function objectPlan(schema: z.ZodType, def: Def, seen: Set<unknown>): ReaderPlan | undefined {
  const fields = shapeFields(def); // none for a `__proto__` key, which JSON.parse makes an own property
  if (fields === undefined) return undefined;
  seen.add(schema);
  const out: { key: string; optional: boolean; of: ReaderPlan }[] = [];
  for (const f of fields) {
    const of = readerPlan(f.schema, seen);
    if (of === undefined) {
      seen.delete(schema);
      return undefined;
    }
    out.push({ key: f.key, optional: f.optional, of });
  }
  seen.delete(schema);
  return { t: 'object', fields: out };
}

/**
 * The scanners every reader shares (JavaScript source, compiled with the generated code so all of it
 * shares the position `P` and the text `s` without a call to read them). Each throws `X` when the text is
 * not in the narrow form; the reader then falls back to JSON.parse.
 */
const PRELUDE = `
var s = '', P = 0;
var RS = /[^"\\\\\\x00-\\x1f]*/y;
var T = [1, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11, 1e12, 1e13, 1e14, 1e15];
function num() {
  var i = P, c = s.charCodeAt(i), neg = false, m = 0, d = 0, fr = 0;
  if (c === 45) { neg = true; c = s.charCodeAt(++i); }
  // One digit loop for "0" too (no branch of its own, whose first run would take the optimized code away);
  // a leading zero must stand alone.
  var z = c === 48;
  if (c >= 48 && c <= 57) { do { m = m * 10 + (c - 48); d++; c = s.charCodeAt(++i); } while (c >= 48 && c <= 57); }
  else throw X;
  if (d > 1 && z) throw X;
  if (c === 46) {
    c = s.charCodeAt(++i);
    if (!(c >= 48 && c <= 57)) throw X;
    do { m = m * 10 + (c - 48); d++; fr++; c = s.charCodeAt(++i); } while (c >= 48 && c <= 57);
  }
  if (c === 101 || c === 69 || d > 15) throw X;
  P = i;
  var v = fr === 0 ? m : m / T[fr];
  return neg ? -v : v;
}
function str() {
  var i = P;
  if (s.charCodeAt(i) !== 34) throw X;
  var j = i + 1, e = j + 16, c;
  // Short strings char by char; the rest of a long one with one sticky regular-expression scan.
  for (;;) {
    c = s.charCodeAt(j);
    if (c === 34) break;
    if (c === 92 || c < 32 || c !== c) throw X;
    if (++j === e) {
      RS.lastIndex = j;
      RS.test(s);
      j = RS.lastIndex;
      if (s.charCodeAt(j) !== 34) throw X;
      break;
    }
  }
  P = j + 1;
  return s.slice(i + 1, j);
}
function word(w, v) {
  for (var k = 0; k < w.length; k++) if (s.charCodeAt(P + k) !== w.charCodeAt(k)) throw X;
  P += w.length;
  return v;
}
function bool() {
  return s.charCodeAt(P) === 116 ? word('true', true) : word('false', false);
}
function nul() {
  return word('null', null);
}
function prim() {
  var c = s.charCodeAt(P);
  return c === 34 ? str() : c === 116 || c === 102 ? bool() : c === 110 ? nul() : num();
}
function ch(c) {
  if (s.charCodeAt(P) !== c) throw X;
  P++;
}
`;

/** Generates the functions of a plan's nodes (n0, n1, ...); `root` names the top one. */
class ReaderGen {
  readonly fns: string[] = [];

  /** An expression reading one value of `plan` at P. */
  expr(plan: ReaderPlan): string {
    switch (plan.t) {
      case 'string':
        return 'str()';
      case 'number':
        return 'num()';
      case 'boolean':
        return 'bool()';
      case 'null':
        return 'nul()';
      case 'primitive':
        return 'prim()';
      case 'nullable':
        return `(s.charCodeAt(P) === 110 ? nul() : ${this.expr(plan.of)})`;
      case 'array':
        return `${this.fn(`if (s.charCodeAt(P) !== 91) throw X;
P++;
var out = [];
if (s.charCodeAt(P) === 93) { P++; return out; }
for (;;) {
  out.push(${this.expr(plan.of)});
  var c = s.charCodeAt(P++);
  if (c === 93) return out;
  if (c !== 44) throw X;
}`)}()`;
      case 'object':
        return `${this.object(plan.fields)}()`;
    }
  }

  private fn(body: string): string {
    this.fns.push(`function n${this.fns.length}() {\n${body}\n}`);
    return `n${this.fns.length - 1}`;
  }

  private object(fields: Extract<ReaderPlan, { t: 'object' }>['fields']): string {
    let body = 'ch(123);\n';
    if (fields.every((f) => !f.optional)) {
      // The common case: every key in order, then one object literal (JSON.parse's property order).
      fields.forEach((f, i) => {
        body += `${expect(`${i > 0 ? ',' : ''}${JSON.stringify(f.key)}:`)}var v${i} = ${this.expr(f.of)};\n`;
      });
      body += `ch(125);\nreturn {${fields.map((f, i) => `${JSON.stringify(f.key)}: v${i}`).join(', ')}};`;
      return this.fn(body);
    }
    // Optional fields: present when their key comes next; properties are added in text order.
    body += 'var o = {}, first = true;\n';
    for (const f of fields) {
      const key = `${JSON.stringify(f.key)}:`;
      const read = `o[${JSON.stringify(f.key)}] = ${this.expr(f.of)};\nfirst = false;\n`;
      if (f.optional) {
        body += `if (first ? ${at('P', key)} : s.charCodeAt(P) === 44 && ${at('P + 1', key)}) {\nP += ${key.length} + (first ? 0 : 1);\n${read}}\n`;
      } else {
        body += `if (!first) ch(44);\n${expect(key)}${read}`;
      }
    }
    body += 'ch(125);\nreturn o;';
    return this.fn(body);
  }
}

/** Whether the text at `pos` (an expression) is `text`. */
function at(pos: string, text: string): string {
  if (text.length > 24) return `s.startsWith(${JSON.stringify(text)}, ${pos})`;
  return `(${Array.from(text, (_, k) => `s.charCodeAt(${pos} + ${k}) === ${text.charCodeAt(k)}`).join(' && ')})`;
}

/** Statements consuming `text` at P, or throwing X. */
function expect(text: string): string {
  return `if (!${at('P', text)}) throw X;\nP += ${text.length};\n`;
}

const compiled = new Map<string, JsonReader>();

/**
 * The reader of a plan (one per distinct plan in this thread), or undefined where code generation is
 * not allowed (`--disallow-code-generation-from-strings`): callers then use JSON.parse.
 */
export function compileJsonReader(plan: ReaderPlan): JsonReader | undefined {
  const key = JSON.stringify(plan);
  const hit = compiled.get(key);
  if (hit) return hit;
  const gen = new ReaderGen();
  const root = gen.expr(plan);
  const source = `${PRELUDE}
${gen.fns.join('\n')}
return function read(text, a, b) {
  s = text;
  P = a;
  try {
    var v = ${root};
    if (P === b) { s = ''; return v; }
  } catch (e) {
    if (e !== X) { s = ''; throw e; }
  }
  s = '';
  return JP(text.slice(a, b));
};`;
  let reader: JsonReader;
  try {
    reader = new Function('X', 'JP', source)(FAIL, JSON.parse) as JsonReader;
  } catch {
    return undefined;
  }
  compiled.set(key, reader);
  return reader;
}

/** What the scanners throw when the text is not in the form they read (never escapes a reader). */
const FAIL = Object.freeze({ notNarrowJson: true });

/** `JSON.parse` as a JsonReader, for payloads without a plan. */
export const parseJsonSlice: JsonReader = (text, start, end) => JSON.parse(start === 0 && end === text.length ? text : text.slice(start, end));

/** The compiled reader of a plan, or `parseJsonSlice` when there is none. */
export function jsonReader(plan: ReaderPlan | undefined): JsonReader {
  return (plan && compileJsonReader(plan)) || parseJsonSlice;
}
