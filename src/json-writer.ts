/**
 * Schema-compiled JSON byte writers. For a schema the serializer can encode, `compileJsonWriter` generates
 * a function that writes the bytes of `JSON.stringify(value)` straight into a buffer, for the schema's
 * parsed output: no intermediate strings, so a batch of events is encoded without building, flattening
 * and transcoding a large string (and without the garbage that leaves).
 *
 * Strings of plain printable ASCII are copied as they are; a string that needs an escape or is not ASCII
 * makes the writer return `NEEDS_STRING`, and the caller encodes that value with the string serializer.
 * A value that does not fit in the buffer returns `NO_ROOM` (the caller grows the buffer and writes it again).
 * Either way nothing before `off` is touched, and bytes after it are garbage to be overwritten.
 */
import type { z } from 'zod';
import { CodeGen, compiledOnce, defOf, enumValues, jsonLiteral, shapeFields, TRANSPARENT_WRAPPERS, type Def, type ShapeField } from './codegen.js';
import { PLAIN } from './serializer.js';

/** Writes `value` as JSON at `off`; returns the offset after it, `NEEDS_STRING` or `NO_ROOM`. */
export type JsonWriter = (value: unknown, buf: Buffer, off: number) => number;

/** A string to be escaped, or not ASCII: encode this value with the string serializer instead. */
export const NEEDS_STRING = -1;
/** The buffer is too small. */
export const NO_ROOM = -2;

/** Longest text of a number (`String(-1.2345678901234567e-308)` is 24 characters). */
const NUMBER_ROOM = 24;

/**
 * A Buffer with its long-standing direct writers (they skip `write`'s argument handling); every byte
 * writer of the library (JSON writers, native records, Redis requests) uses these.
 */
export interface DirectBuffer extends Buffer {
  utf8Write(s: string, offset: number, length?: number): number;
  latin1Write(s: string, offset: number, length?: number): number;
}

/** Copies a string known to be ASCII; the caller checked the room. */
function copyAscii(s: string, b: Buffer, o: number): number {
  for (let i = 0; i < s.length; i++) b[o++] = s.charCodeAt(i);
  return o;
}

/** `"s"` for a plain printable ASCII string. */
function writeString(s: string, b: Buffer, o: number): number {
  const n = s.length;
  if (o + n + 2 > b.length) return NO_ROOM;
  b[o++] = 0x22;
  if (n > 32) {
    // Long: one regular-expression scan, then one native copy.
    if (!PLAIN.test(s)) return NEEDS_STRING;
    o += (b as DirectBuffer).latin1Write(s, o);
  } else {
    for (let i = 0; i < n; i++) {
      const c = s.charCodeAt(i);
      if (c < 0x20 || c > 0x7e || c === 0x22 || c === 0x5c) return NEEDS_STRING;
      b[o++] = c;
    }
  }
  b[o++] = 0x22;
  return o;
}

/** A finite number as JSON.stringify writes it (small integers digit by digit, others via their string), else `null`. */
function writeNumber(v: number, b: Buffer, o: number): number {
  if (o + NUMBER_ROOM > b.length) return NO_ROOM;
  // Integers below 2^31 with integer arithmetic only (no string); -0 is written "0", as JSON.stringify does.
  if (v >= 0 && v < 2147483648 && v === (v | 0)) return writeUint31(v, b, o);
  if (v < 0 && v > -2147483648 && v === (v | 0)) {
    b[o] = 0x2d;
    return writeUint31(-v, b, o + 1);
  }
  if (v > -2147483648 && v < 2147483648) {
    const end = writeShortDecimal(v, b, o);
    if (end > 0) return end;
  } else if (Number.isSafeInteger(v)) {
    // Timestamps (Date.now(), hrtime in ns): digits written here, without the string String(v) would make.
    if (v > 0) return writeSafeUint(v, b, o);
    b[o] = 0x2d;
    return writeSafeUint(-v, b, o + 1);
  }
  return copyAscii(Number.isFinite(v) ? String(v) : 'null', b, o);
}

/**
 * An integer in [2^31, 2^53) as decimal digits: its digits above the last eight (a number below 2^27) by
 * `writeUint31`, then the last eight, leading zeros included. The split is exact: `v / 1e8` is at most
 * 1 - 1e-8 above its floor, and next to an integer below 2^27 a double's spacing is at most 2^-26 (1.5e-8), so
 * the division never rounds up to the next integer; `hi * 1e8` and the difference are integers below 2^53.
 */
function writeSafeUint(v: number, b: Buffer, o: number): number {
  const hi = Math.floor(v / 100000000);
  let lo = v - hi * 100000000;
  o = writeUint31(hi, b, o);
  for (let i = o + 7; i > o; i -= 2) {
    const q = (lo / 100) | 0;
    const r = (lo - q * 100) << 1;
    b[i] = DIGIT_PAIRS[r + 1]!;
    b[i - 1] = DIGIT_PAIRS[r]!;
    lo = q;
  }
  return o + 8;
}

/** 10^k for k = 0..9 (decimals use k <= 6; digit counts up to 10 digits). */
const POW10 = [1, 10, 100, 1000, 10000, 100000, 1000000, 10000000, 100000000, 1000000000];

/**
 * A non-integer below 2^31 in magnitude with at most 6 decimals in its shortest form (prices, rates:
 * `150.25`), without `String(v)`: the first k for which m = round(|v| * 10^k) gives m / 10^k === v is
 * the digit count of the shortest decimal that reads back as v, which is what JSON.stringify writes.
 * Below 2^31 a double's spacing is under 10^-6, so that decimal is the only one with k digits. Returns
 * -1 when v needs more than 6 decimals (the caller uses String(v)).
 */
function writeShortDecimal(v: number, b: Buffer, o: number): number {
  const a = v < 0 ? -v : v;
  for (let k = 1; k <= 6; k++) {
    const p = POW10[k]!;
    const m = Math.round(a * p);
    if (m / p !== a) continue;
    const whole = Math.floor(a);
    let frac = m - whole * p;
    if (v < 0) b[o++] = 0x2d;
    o = writeUint31(whole, b, o);
    b[o] = 0x2e;
    // k digits, leading zeros included (0.05 is "0.05"); the last is never 0, or a smaller k would have matched.
    for (let i = o + k; i > o; i--) {
      const q = (frac / 10) | 0;
      b[i] = 48 + frac - q * 10;
      frac = q;
    }
    return o + k + 1;
  }
  return -1;
}

/** The ASCII digits of 00..99, two bytes each. */
const DIGIT_PAIRS = new Uint8Array(200);
for (let i = 0; i < 100; i++) {
  DIGIT_PAIRS[2 * i] = 48 + ((i / 10) | 0);
  DIGIT_PAIRS[2 * i + 1] = 48 + (i % 10);
}

/**
 * Decimal digits of an integer in [0, 2^31), with the same two comparisons for every number (a chain of
 * `v < 10 ? 1 : v < 100 ? 2 ...` would lose its optimized code at the first number longer than all before it).
 * `v | 1` has the digits of `v` (an even number plus one is never a power of ten) and is never 0. Its bit
 * length times log10(2) (1233 / 4096) is its digit count or one less.
 */
function digitCount(v: number): number {
  const u = v | 1;
  const t = ((32 - Math.clz32(u)) * 1233) >> 12;
  return u >= POW10[t]! ? t + 1 : t;
}

/**
 * Two digits per division (half the divisions of one at a time). The last one or
 * two digits are written without a branch: the tens digit at `o`, then the ones digit at `p - 1`, which is
 * `o` itself when one digit is left (it overwrites the tens). A branch there would take the optimized code away
 * (a deopt, then a recompile on a V8 helper thread) the first time a number's leading digits came out the
 * other way than every number before: ids of 5 digits, then 2 or 4 (V8: "Insufficient type feedback").
 */
function writeUint31(v: number, b: Buffer, o: number): number {
  const len = digitCount(v);
  let p = o + len;
  while (v >= 100) {
    const q = (v / 100) | 0;
    const r = (v - q * 100) << 1;
    b[--p] = DIGIT_PAIRS[r + 1]!;
    b[--p] = DIGIT_PAIRS[r]!;
    v = q;
  }
  b[o] = DIGIT_PAIRS[v << 1]!;
  b[p - 1] = DIGIT_PAIRS[(v << 1) + 1]!;
  return o + len;
}

function writeBoolean(v: boolean, b: Buffer, o: number): number {
  if (o + 5 > b.length) return NO_ROOM;
  return copyAscii(v ? 'true' : 'false', b, o);
}

/** Fixed bytes (field names, `null`). */
function writeBytes(bytes: Uint8Array, b: Buffer, o: number): number {
  if (o + bytes.length > b.length) return NO_ROOM;
  for (let i = 0; i < bytes.length; i++) b[o++] = bytes[i]!;
  return o;
}

/** A literal value through JSON.stringify (ASCII only). */
function writeLiteral(v: unknown, b: Buffer, o: number): number {
  const s = JSON.stringify(v);
  if (o + s.length > b.length) return NO_ROOM;
  for (let i = 0; i < s.length; i++) if (s.charCodeAt(i) > 0x7e) return NEEDS_STRING;
  return copyAscii(s, b, o);
}

/** `[..]` of `list`, each element written by `el`. */
export function writeArray(list: unknown[], el: JsonWriter, b: Buffer, o: number): number {
  if (o + 2 > b.length) return NO_ROOM;
  b[o++] = 0x5b;
  for (let i = 0; i < list.length; i++) {
    if (i > 0) {
      if (o + 1 > b.length) return NO_ROOM;
      b[o++] = 0x2c;
    }
    o = el(list[i], b, o);
    if (o < 0) return o;
  }
  if (o + 1 > b.length) return NO_ROOM;
  b[o++] = 0x5d;
  return o;
}

const NULL = Buffer.from('null');

export class WriterCompiler extends CodeGen<JsonWriter> {
  /** Byte constants the generated code copies (field names with their separators). */
  private readonly consts: Uint8Array[] = [];

  protected override readonly params = 'v, b, o';

  protected helpers(): Record<string, unknown> {
    return { S: writeString, N: writeNumber, B: writeBoolean, L: writeLiteral, W: writeBytes, A: writeArray, K: this.consts, Z: NULL };
  }

  /** Statements writing fixed text at `o` (a field name with its separators): unrolled when short. */
  protected put(text: string): string {
    const bytes = Buffer.from(text, 'utf8');
    if (bytes.length > 24) {
      this.consts.push(bytes);
      return `o = W(K[${this.consts.length - 1}], b, o);\nif (o < 0) return o;\n`;
    }
    let code = `if (o + ${bytes.length} > b.length) return -2;\n`;
    for (const x of bytes) code += `b[o++] = ${x};\n`;
    return code;
  }

  /**
   * Statements writing a field's name with the comma before it if one is due: `st` is the offset after "{", so
   * something was written since when `o > st`.
   */
  protected separator(f: ShapeField): string {
    const k = JSON.stringify(f.key);
    const bare = this.put(`${k}:`);
    const comma = this.put(`,${k}:`);
    return f.before === 'first' ? bare : f.before === 'after' ? comma : `if (o > st) {\n${comma}} else {\n${bare}}\n`;
  }

  protected expr(schema: z.ZodType, v: string): string | undefined {
    const def = defOf(schema);
    if (TRANSPARENT_WRAPPERS.has(def.type)) return this.expr(def.innerType, v);
    const leaf = leafWrite(def, v);
    if (leaf !== null) return leaf;
    switch (def.type) {
      case 'nullable': {
        const inner = this.fn(def.innerType);
        return inner === undefined ? undefined : `(${v} === null ? W(Z, b, o) : f[${inner}](${v}, b, o))`;
      }
      case 'array': {
        const el = this.fn(def.element);
        return el === undefined ? undefined : `A(${v}, f[${el}], b, o)`;
      }
      case 'object': {
        const fn = this.object(def);
        return fn === undefined ? undefined : `f[${fn}](${v}, b, o)`;
      }
      default:
        return undefined;
    }
  }

  protected object(def: Def): number | undefined {
    const fields = shapeFields(def);
    if (fields === undefined) return undefined;
    // `st` is the offset after "{": a field is preceded by a comma when something was written since.
    let body = 'var d = v;\nif (o + 2 > b.length) return -2;\nb[o++] = 123;\nvar st = o;\n';
    for (const f of fields) {
      const access = `d[${JSON.stringify(f.key)}]`;
      const e = this.expr(f.schema, access);
      if (e === undefined) return undefined;
      const write = `${this.separator(f)}o = ${e};\nif (o < 0) return o;\n`;
      body += f.optional ? `if (${access} !== undefined) {\n${write}}\n` : write;
    }
    body += 'if (o + 1 > b.length) return -2;\nb[o++] = 125;\nreturn o;';
    return this.add(body);
  }
}

/** The write of a leaf node's value `v` (string, enum, number, boolean, null, literal); undefined when it has none, null when not a leaf. */
function leafWrite(def: Def, v: string): string | undefined | null {
  switch (def.type) {
    case 'string':
      return `S(${v}, b, o)`;
    case 'enum': // string values, or a TypeScript enum's numbers
      return enumValues(def).strings ? `S(${v}, b, o)` : `L(${v}, b, o)`;
    case 'number':
      return `N(${v}, b, o)`;
    case 'boolean':
      return `B(${v}, b, o)`;
    case 'null':
      return 'W(Z, b, o)';
    case 'literal':
      return jsonLiteral(def) ? `L(${v}, b, o)` : undefined;
    default:
      return null;
  }
}

const writers = new WeakMap<z.ZodType, JsonWriter | null>();

/** A byte writer for the parsed output of `schema`, or undefined when only the string encoders will do (made once per schema object). */
export function compileJsonWriter(schema: z.ZodType): JsonWriter | undefined {
  return compiledOnce(writers, schema, () => new WriterCompiler().compile(schema));
}
