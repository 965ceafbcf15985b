import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { compileValidator, INVALID } from '../../src/validator.js';

/** Deep key order, so "same output as zod" includes the order handlers see in Object.keys. */
function keyOrder(v: unknown): unknown {
  if (Array.isArray(v)) return v.map(keyOrder);
  if (v !== null && typeof v === 'object') return Object.entries(v).map(([k, x]) => [k, keyOrder(x)]);
  return v;
}

/** The compiled validator must agree with zod whenever it accepts; INVALID means "zod decides". */
function agree(schema: z.ZodType, inputs: unknown[]): { accepted: number } {
  const validate = compileValidator(schema)!;
  expect(validate).toBeTypeOf('function');
  let accepted = 0;
  for (const input of inputs) {
    const fast = validate(input);
    const slow = schema.safeParse(input);
    if (fast === INVALID) continue;
    accepted++;
    expect(slow.success, `zod rejects what the compiled validator accepted: ${JSON.stringify(input)}`).toBe(true);
    expect(fast).toStrictEqual(slow.data);
    expect(keyOrder(fast)).toEqual(keyOrder(slow.data));
  }
  return { accepted };
}

describe('compileValidator', () => {
  const order = z.object({
    id: z.number().int(),
    sku: z.string(),
    qty: z.int(),
    px: z.number(),
    side: z.enum(['buy', 'sell']),
    tag: z.literal('x').nullable(),
    flags: z.array(z.boolean()),
    note: z.string().optional(),
    nested: z.object({ a: z.string(), b: z.number().optional() }),
  });
  const good = { id: 1, sku: 'A', qty: 2, px: 1.5, side: 'buy', tag: null, flags: [true], nested: { a: 'q' } };

  it('accepts valid payloads without zod and builds the same output (unknown keys stripped, shape order)', () => {
    const { accepted } = agree(order, [
      good,
      { ...good, extra: 1, note: 'n' },
      { nested: { b: 2, a: 'z', c: 3 }, flags: [], tag: 'x', side: 'sell', px: -0, qty: 0, sku: '', id: -5 },
      { ...good, note: undefined },
    ]);
    expect(accepted).toBe(4);
  });

  it('never accepts what zod rejects', () => {
    const bad: unknown[] = [
      null,
      undefined,
      1,
      'x',
      [],
      [good],
      new Date(),
      { ...good, id: 1.5 },
      { ...good, id: 2 ** 60 },
      { ...good, px: Infinity },
      { ...good, px: NaN },
      { ...good, px: '1' },
      { ...good, side: 'hold' },
      { ...good, tag: 'y' },
      { ...good, flags: [1] },
      { ...good, flags: 'x' },
      { ...good, flags: [true, , true] },
      { ...good, note: 5 },
      { ...good, nested: null },
      { ...good, nested: { a: 1 } },
      { ...good, sku: undefined },
      Object.assign(Object.create({ note: undefined }), { ...good }),
    ];
    for (const input of bad) expect(compileValidator(order)!(input), JSON.stringify(input)).toBe(INVALID);
    agree(order, bad);
  });

  it('delegates what it does not model (formats, refinements, transforms, defaults, unions) to zod, with the same result', () => {
    const schema = z
      .object({
        email: z.email(),
        short: z.string().max(3),
        n: z.number().min(0),
        when: z.string().transform((s) => s.length),
        d: z.string().default('dflt'),
        u: z.union([z.string(), z.number()]),
        rec: z.record(z.string(), z.number()),
        list: z.array(z.string()).min(1),
        strict: z.strictObject({ a: z.string() }),
        loose: z.looseObject({ a: z.string() }),
        any: z.unknown(),
      })
      .refine((v) => v.n !== 13);
    const base = { email: 'a@b.co', short: 'abc', n: 1, when: 'four', d: 'x', u: 2, rec: { a: 1 }, list: ['x'], strict: { a: 'y' }, loose: { a: 'y', b: 1 }, any: { z: 1 } };
    agree(schema, [
      base,
      { ...base, d: undefined },
      { ...base, email: 'nope' },
      { ...base, short: 'abcd' },
      { ...base, n: -1 },
      { ...base, n: 13 },
      { ...base, list: [] },
      { ...base, strict: { a: 'y', b: 1 } },
      { ...base, u: true },
    ]);
    const inner = z.object({
      email: z.email(),
      d: z.string().default('dflt'),
      strict: z.strictObject({ a: z.string() }),
    });
    expect(compileValidator(inner)!({ email: 'a@b.co', d: 'x', strict: { a: 'y' } })).toEqual({ email: 'a@b.co', d: 'x', strict: { a: 'y' } });
    expect(compileValidator(inner)!({ email: 'a@b.co', d: 'x', strict: { a: 'y', b: 1 } })).toBe(INVALID);
    expect(compileValidator(inner)!({ email: 'nope', d: 'x', strict: { a: 'y' } })).toBe(INVALID);
  });

  it('models number bounds and string lengths exactly, at the boundaries', () => {
    const schema = z.object({
      amount: z.number().positive(),
      qty: z.int().nonnegative().max(10),
      ratio: z.number().gt(0.5).lt(1),
      code: z.string().length(3),
      name: z.string().min(1).max(5),
      tag: z.string().nonempty().optional(),
    });
    const base = { amount: 1, qty: 0, ratio: 0.75, code: 'abc', name: 'n' };
    const { accepted } = agree(schema, [
      base,
      { ...base, amount: 1e-9, qty: 10, ratio: 0.9999, name: 'fivec', tag: 'x' },
      { ...base, amount: 0 },
      { ...base, amount: -0 },
      { ...base, qty: 11 },
      { ...base, qty: -1 },
      { ...base, qty: 1.5 },
      { ...base, ratio: 0.5 },
      { ...base, ratio: 1 },
      { ...base, code: 'ab' },
      { ...base, code: 'abcd' },
      { ...base, name: '' },
      { ...base, name: 'sixsix' },
      { ...base, name: 'é😀' },
      { ...base, tag: '' },
    ]);
    expect(accepted).toBe(3);
  });

  it('string lengths as this zod counts them (code points since zod 4.6, UTF-16 units before): never accepts what zod rejects', () => {
    const schema = z.object({ code: z.string().length(2), name: z.string().min(2), short: z.string().max(2).optional() });
    const strings = ['ab', '😀', '𝒜', 'a😀', '😀😀', '\uD800', '\uD800\uD800', 'é', 'abc', '😀😀😀', 'a\uDC00'];
    const inputs = strings.flatMap((x) => [
      { code: x, name: 'nn' },
      { code: 'cc', name: x },
      { code: 'cc', name: 'nn', short: x },
    ]);
    // With zod 4.6 (code points) '😀' fails length(2) and '𝒜' min(2): the compiled validator refuses them too.
    const { accepted } = agree(schema, inputs);
    expect(accepted).toBeGreaterThan(3);
    const both = compileValidator(z.string().length(2))!;
    expect(both('😀') === INVALID || z.string().length(2).safeParse('😀').success).toBe(true);
    expect(both('ab')).toBe('ab');
  });

  it('handles top-level primitives, arrays and recursion', () => {
    agree(z.string(), ['a', 1, null]);
    agree(z.array(z.object({ a: z.number() })), [[{ a: 1, b: 2 }], [{ a: 'x' }], [], 'x']);
    agree(z.number().int().nullable().optional(), [1, null, undefined, 1.5]);
    type Tree = { v: number; kids: Tree[] };
    const tree: z.ZodType<Tree> = z.object({ v: z.number(), kids: z.array(z.lazy(() => tree)) });
    expect(
      agree(tree, [
        { v: 1, kids: [{ v: 2, kids: [] }] },
        { v: 1, kids: [{ v: 'x', kids: [] }] },
      ]).accepted,
    ).toBe(1);
  });
});

describe('compiled functions are made once per schema', () => {
  it('returns the same validator, serializer, size functions and writer for the same schema object', async () => {
    const { compileSerializer, compileSizeBound, compileSizeEstimate } = await import('../../src/serializer.js');
    const { compileJsonWriter } = await import('../../src/json-writer.js');
    const a = z.object({ id: z.number(), name: z.string() });
    const b = z.object({ id: z.number(), name: z.string() });
    for (const compile of [compileValidator, compileSerializer, compileSizeBound, compileSizeEstimate, compileJsonWriter] as ((s: z.ZodType) => unknown)[]) {
      const first = compile(a);
      expect(first).toBeTypeOf('function');
      expect(compile(a)).toBe(first); // a second bus over the same definitions reuses it
      expect(compile(b)).not.toBe(first); // an equal but distinct schema compiles its own
    }
  });
});
