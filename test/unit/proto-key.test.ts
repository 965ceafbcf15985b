import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { compileJsonWriter, NEEDS_STRING } from '../../src/json-writer.js';
import { compileSerializer, compileSizeBound, compileSizeEstimate } from '../../src/serializer.js';
import { compileValidator, INVALID } from '../../src/validator.js';

/**
 * A schema may declare a `__proto__` key (`{ ['__proto__']: ... }` makes it an own key). zod never puts it
 * in the parsed output (assigning it would replace the output's prototype), so JSON.stringify of the
 * output never has it either.
 */
const shape = Object.defineProperty({ b: z.number() } as Record<string, z.ZodType>, '__proto__', {
  value: z.object({ c: z.string() }),
  enumerable: true,
  writable: true,
  configurable: true,
});
const schema = z.object(shape);
const input = JSON.parse('{"__proto__":{"c":"x"},"b":1}');

describe('a `__proto__` key in a schema', () => {
  it('the compiled validator builds what zod builds (no prototype from the payload)', () => {
    const zod = schema.parse(input);
    const fast = compileValidator(schema)!(input);
    const out = fast === INVALID ? zod : fast;
    expect(Object.getPrototypeOf(out)).toBe(Object.getPrototypeOf(zod));
    expect((out as { c?: unknown }).c).toBe(undefined);
    expect(out).toStrictEqual(zod);
  });

  it('the serializer and the byte writer write what JSON.stringify writes for the parsed output', () => {
    const out = schema.parse(input);
    const expected = JSON.stringify(out);
    const serialize = compileSerializer(schema) ?? JSON.stringify;
    expect(serialize(out)).toBe(expected);
    const write = compileJsonWriter(schema);
    if (write !== undefined) {
      const buf = Buffer.alloc(256);
      const end = write(out, buf, 0);
      if (end !== NEEDS_STRING) expect(buf.toString('utf8', 0, end)).toBe(expected);
    }
  });

  it('size bounds are numbers, not NaN', () => {
    const out = schema.parse(input);
    for (const size of [compileSizeBound(schema), compileSizeEstimate(schema)]) {
      if (size !== undefined) expect(size(out)).toBeGreaterThanOrEqual(Buffer.byteLength(JSON.stringify(out)) / 6);
    }
  });
});
