/**
 * Checking JSON writers: the compiled validator's checks and the compiled JSON writer in one pass. For a schema
 * whose parsed output is the payload itself with unknown keys stripped (no defaults, transforms, refinements,
 * unions, formats: nodes only zod can judge), `compileCheckedWriter` generates a function that reads each field
 * of a payload once, checks it as the validator would and writes its JSON as the writer would. So the bytes are
 * of the very values checked (a getter that answers differently on each read cannot slip an unchecked value
 * in), and a payload is walked once instead of twice.
 *
 * Where the validator would answer INVALID (a failing value, an `undefined` where zod might apply a default,
 * an inherited key) the function returns `UNSURE`: ask zod for the verdict and write its output with the plain
 * writer. Otherwise it returns what a `JsonWriter` returns (the end, `NEEDS_STRING` or `NO_ROOM`).
 */
import type { z } from 'zod';
import { compiledOnce, defOf, shapeFields, type Def } from './codegen.js';
import { writeArray, WriterCompiler, type JsonWriter } from './json-writer.js';
import { hasOwn, leafCondition, objectMode, plainOptional } from './validator.js';

/** Returned by a checking writer for "not proven valid: ask zod, then write its output". */
export const UNSURE = -3;

/**
 * `[..]` of a list whose elements pass `el`; UNSURE for anything else. A hole or an `undefined` element (zod
 * decides) is UNSURE already: no element writer here accepts `undefined` (no optional elements, no literal
 * `undefined`), so each element is read once, by `writeArray`.
 */
function writeCheckedArray(list: unknown, el: JsonWriter, b: Buffer, o: number): number {
  return Array.isArray(list) ? writeArray(list, el, b, o) : UNSURE;
}

class CheckedWriterCompiler extends WriterCompiler {
  /** Values the checks refer to (enum and literal value sets, a strict object's keys). */
  private readonly values: unknown[] = [];

  protected override helpers(): Record<string, unknown> {
    return { ...super.helpers(), C: this.values, CA: writeCheckedArray, own: hasOwn };
  }

  private constant(value: unknown): string {
    this.values.push(value);
    return `C[${this.values.length - 1}]`;
  }

  /** The writer's expression behind the validator's condition; undefined wherever the validator would delegate to zod. */
  protected override expr(schema: z.ZodType, v: string): string | undefined {
    const def = defOf(schema);
    const plain = !def.coerce && !(def.checks?.length > 0);
    const leaf = leafCondition(schema, v, (x) => this.constant(x));
    if (leaf === undefined) return undefined;
    if (leaf !== null) {
      const write = super.expr(schema, v);
      return write === undefined ? undefined : `(${leaf} ? ${write} : ${UNSURE})`;
    }
    switch (def.type) {
      case 'nullable':
      case 'object':
        return plain ? super.expr(schema, v) : undefined; // inner nodes and fields come back here
      case 'array': {
        const el = plain ? this.fn(def.element) : undefined;
        return el === undefined ? undefined : `CA(${v}, f[${el}], b, o)`;
      }
      default:
        return undefined; // wrappers (defaults, readonly), unions, optionals outside an object's fields, ...
    }
  }

  protected override object(def: Def): number | undefined {
    const mode = objectMode(def);
    const fields = shapeFields(def);
    if (mode === undefined || fields === undefined) return undefined;
    let body = `if (typeof v !== 'object' || v === null || Array.isArray(v)) return ${UNSURE};\n`;
    if (mode === 'strict') body += `for (var k in v) if (!${this.constant(new Set(fields.map((f) => f.key)))}.has(k)) return ${UNSURE};\n`;
    // `st` is the offset after "{" (see `separator`).
    body += 'if (o + 2 > b.length) return -2;\nb[o++] = 123;\nvar st = o;\n';
    for (let i = 0; i < fields.length; i++) {
      const f = fields[i]!;
      if (f.optional && !plainOptional((def.shape as Record<string, z.ZodType>)[f.key]!)) return undefined;
      const k = JSON.stringify(f.key);
      const e = this.expr(f.schema, `x${i}`);
      if (e === undefined) return undefined;
      const write = `${this.separator(f)}o = ${e};\nif (o < 0) return o;\n`;
      body += `var x${i} = v[${k}];\n`;
      // Required: undefined may get a default or be rejected, zod decides. Optional: absent or an own key holding
      // undefined is left out, as JSON.stringify leaves out zod's output; an inherited undefined: zod decides.
      body += f.optional ? `if (x${i} !== undefined) {\n${write}} else if (!own(v, ${k}) && ${k} in v) return ${UNSURE};\n` : `if (x${i} === undefined) return ${UNSURE};\n${write}`;
    }
    body += 'if (o + 1 > b.length) return -2;\nb[o++] = 125;\nreturn o;';
    return this.add(body);
  }
}

const checkedWriters = new WeakMap<z.ZodType, JsonWriter | null>();

/**
 * A checking writer for `schema` (see the module comment): writes a valid payload's JSON, which is that of the
 * schema's parsed output, or returns `UNSURE`. Undefined when some node of the schema only zod can judge, or
 * the JSON writer cannot write it. Made once per schema object.
 */
export function compileCheckedWriter(schema: z.ZodType): JsonWriter | undefined {
  return compiledOnce(checkedWriters, schema, () => new CheckedWriterCompiler().compile(schema));
}
