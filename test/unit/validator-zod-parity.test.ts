import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { compileValidator, INVALID } from '../../src/validator.js';

/** What the bus does with a compiled validator: its output, or zod's verdict where it answers INVALID. */
function parse(schema: z.ZodType, input: unknown): { ok: boolean; data?: unknown } {
  const fast = compileValidator(schema)!(input);
  if (fast !== INVALID) return { ok: true, data: fast };
  const r = schema.safeParse(input);
  return r.success ? { ok: true, data: r.data } : { ok: false };
}

function zod(schema: z.ZodType, input: unknown): { ok: boolean; data?: unknown } {
  const r = schema.safeParse(input);
  return r.success ? { ok: true, data: r.data } : { ok: false };
}

describe('compileValidator: optional nodes that do not pass undefined through', () => {
  it('applies the default of `.default(x).optional()` / `.prefault(x).optional()` for an absent key, as zod does', () => {
    for (const schema of [
      z.object({ a: z.string().default('dflt').optional() }),
      z.object({ a: z.string().prefault('pre').optional(), b: z.number() }),
      z.object({ a: z.number().default(1).nullable().optional() }),
    ]) {
      for (const input of [{}, { b: 1 }, { a: undefined, b: 1 }]) expect(parse(schema, input)).toStrictEqual(zod(schema, input));
    }
    const top = z.string().default('dflt').optional();
    expect(parse(top, undefined)).toStrictEqual({ ok: true, data: 'dflt' });
  });

  it('rejects an explicit undefined for `.exactOptional()`, as zod does', () => {
    const schema = z.object({ a: z.string().exactOptional() });
    expect(zod(schema, { a: undefined }).ok).toBe(false);
    expect(parse(schema, { a: undefined })).toStrictEqual({ ok: false });
    expect(parse(schema, {})).toStrictEqual(zod(schema, {}));
    expect(parse(schema, { a: 'x' })).toStrictEqual(zod(schema, { a: 'x' }));
    expect(parse(z.string().exactOptional(), undefined)).toStrictEqual({ ok: false });
  });
});

describe('compileValidator: checks on nullable, optional and null nodes', () => {
  it('runs the refinements of `.nullable()`, `.optional()` and `z.null()` (zod rejects; so must the bus)', () => {
    const cases: [z.ZodType, unknown][] = [
      [
        z
          .string()
          .nullable()
          .refine((v) => v !== null, 'required'),
        null,
      ],
      [
        z.object({
          a: z
            .number()
            .nullable()
            .refine((v) => v === null || v > 0),
        }),
        { a: -1 },
      ],
      [
        z
          .string()
          .optional()
          .refine((v) => v !== 'bad'),
        'bad',
      ],
      [
        z.object({
          a: z
            .string()
            .optional()
            .refine((v) => v !== 'bad'),
        }),
        { a: 'bad' },
      ],
      [z.null().refine(() => false), null],
    ];
    for (const [schema, input] of cases) {
      expect(zod(schema, input).ok).toBe(false);
      expect(parse(schema, input)).toStrictEqual({ ok: false });
    }
  });

  it('applies their overwrites, as zod does', () => {
    const schema = z.object({
      a: z
        .string()
        .nullable()
        .overwrite((v) => v ?? 'none'),
    });
    expect(parse(schema, { a: null })).toStrictEqual({ ok: true, data: { a: 'none' } });
  });
});

describe('compileValidator: string length bounds', () => {
  it('compiles `.min()`, `.max()` and `.length()` (no call into zod) and agrees with zod at every length', () => {
    const schema = z.object({ a: z.string().min(2).max(4), b: z.string().length(3).optional() });
    const calls: unknown[] = [];
    const spy = (z.string() as unknown as { constructor: { prototype: { safeParse: unknown } } }).constructor.prototype;
    const own = spy.safeParse;
    spy.safeParse = function (this: unknown, ...args: unknown[]) {
      calls.push(args[0]);
      return (own as (...a: unknown[]) => unknown).apply(this, args);
    };
    try {
      const validate = compileValidator(schema)!;
      for (let n = 0; n <= 6; n++) expect(validate({ a: 'x'.repeat(n) }) !== INVALID).toBe(n >= 2 && n <= 4);
      for (let n = 0; n <= 6; n++) expect(validate({ a: 'xx', b: 'y'.repeat(n) }) !== INVALID).toBe(n === 3);
    } finally {
      spy.safeParse = own;
    }
    expect(calls).toEqual([]); // no node was handed to zod
    for (let n = 0; n <= 6; n++) {
      for (const input of [{ a: 'x'.repeat(n) }, { a: 'xx', b: 'y'.repeat(n) }]) expect(parse(schema, input)).toStrictEqual(zod(schema, input));
    }
  });
});
