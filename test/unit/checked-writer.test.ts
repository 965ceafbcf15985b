/**
 * The checking JSON writer (`compileCheckedWriter`): the validator's checks and the JSON writer in one pass. A
 * payload it writes must be one zod accepts, written as the JSON of zod's output; where it is unsure it says so
 * (UNSURE) and zod decides; and it reads each field once, so its bytes are of the values it checked.
 */
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { compileCheckedWriter, UNSURE } from '../../src/checked-writer.js';
import { NEEDS_STRING, NO_ROOM } from '../../src/json-writer.js';
import { trade, writtenAfterPrefix } from '../helpers/schemas.js';

const wide = z.object({
  id: z.number().int().min(0),
  s: z.string().min(1).max(8),
  tags: z.array(z.string()),
  o: z.object({ b: z.boolean() }).strict().optional(),
  n: z.number().nullable(),
  e: z.enum(['a', 'b']),
  k: z.literal('limit'),
  z: z.null(),
  opt: z.string().optional(),
});

/** What the checking writer writes for `input` after a prefix it must not touch: the JSON text, or its code. */
function written(schema: z.ZodType, input: unknown, room = 1 << 12): string | number {
  return writtenAfterPrefix(compileCheckedWriter(schema)!, input, room);
}

const ok = { id: 1, s: 'x', tags: ['a'], o: { b: true }, n: null, e: 'a', k: 'limit', z: null, unknown: 1 };

describe('compileCheckedWriter', () => {
  it("writes a valid payload as the JSON of zod's output (unknown keys stripped, fields in shape order)", () => {
    for (const input of [
      ok,
      { ...ok, o: undefined, opt: 'y' },
      { k: 'limit', z: null, e: 'b', n: 2.5, tags: [], s: 'z', id: 0 }, // absent optionals, another key order
      { ...ok, opt: undefined }, // an own key holding undefined: left out, as JSON.stringify leaves it out
    ]) {
      expect(written(wide, input)).toBe(JSON.stringify(wide.parse(input)));
    }
    const t = { id: 1.5, sym: 'AAPL', px: 150.25, qty: 100 };
    expect(written(trade, t)).toBe(JSON.stringify(t));
  });

  it('is UNSURE wherever zod rejects, and for undefined where zod might decide otherwise', () => {
    const bad = [
      { ...ok, id: 1.5 },
      { ...ok, id: -1 },
      { ...ok, s: 'longer than 8' },
      { ...ok, s: '' },
      { ...ok, tags: ['a', 1] },
      { ...ok, tags: ['a', undefined] },
      { ...ok, tags: new Array<string>(2) }, // holes
      { ...ok, o: { b: true, c: 1 } }, // strict
      { ...ok, e: 'c' },
      { ...ok, k: 'market' },
      { ...ok, z: 0 },
      { ...ok, n: Number.NaN },
      { ...ok, id: undefined },
      null,
      [],
      'text',
    ];
    for (const input of bad) {
      expect(written(wide, input)).toBe(UNSURE);
      expect(wide.safeParse(input).success).toBe(false);
    }
    // An inherited undefined for an optional key: zod decides.
    const inherited = Object.assign(Object.create({ opt: undefined }) as object, ok);
    expect(written(wide, inherited)).toBe(UNSURE);
  });

  it('reads each field once: the bytes are of the value it checked', () => {
    let reads = 0;
    const payload = {
      ...{ sym: 'AAPL', px: 1, qty: 2 },
      get id(): unknown {
        reads++;
        return reads === 1 ? 7 : 'not a number';
      },
    };
    expect(written(trade, payload)).toBe('{"id":7,"sym":"AAPL","px":1,"qty":2}');
    expect(reads).toBe(1);
  });

  it('leaves text to escape or beyond ASCII to the string encoder, and reports NO_ROOM at every size', () => {
    expect(written(wide, { ...ok, s: 'q"d' })).toBe(NEEDS_STRING);
    expect(written(wide, { ...ok, s: 'Zürich' })).toBe(NEEDS_STRING);
    const full = JSON.stringify(wide.parse(ok));
    for (let room = 0; room < full.length; room++) expect(written(wide, ok, room)).toBe(NO_ROOM);
    expect(written(wide, ok, full.length)).toBe(full);
  });

  it('is undefined where only zod can say what the output is (defaults, transforms, refinements, unions, formats)', () => {
    for (const schema of [
      z.object({ a: z.string().default('x') }),
      z.object({ a: z.string().transform((s) => s.length) }),
      z.object({ a: z.number().refine((n) => n > 0) }),
      z.object({ a: z.union([z.string(), z.number()]) }),
      z.object({ a: z.string().email() }),
      z.object({
        a: z
          .number()
          .nullable()
          .refine((n) => n !== 0),
      }),
      z.object({ a: z.string().exactOptional() }),
      z.object({ a: z.coerce.number() }),
      z.object({ a: z.string() }).passthrough(),
      z.object({ a: z.string() }).readonly(),
    ]) {
      expect(compileCheckedWriter(schema)).toBeUndefined();
    }
  });

  it('agrees with zod on generated payloads: written means accepted, as zod writes it', () => {
    const values = [0, 1, -1, 1.5, 2 ** 31, Number.MAX_SAFE_INTEGER + 2, 'a', 'x'.repeat(40), '', true, null, undefined, [], ['a'], [1], {}, { b: false }];
    const keys = Object.keys(wide.shape);
    let seed = 7;
    const pick = <T>(list: readonly T[]): T => list[(seed = (seed * 1103515245 + 12345) % 2 ** 31) % list.length]!;
    let written_ = 0;
    for (let i = 0; i < 3000; i++) {
      const input: Record<string, unknown> = { ...ok };
      for (let k = 0; k < 2; k++) input[pick(keys)] = pick(values);
      const out = written(wide, input);
      const zod = wide.safeParse(input);
      if (typeof out === 'string') {
        written_++;
        expect(zod.success).toBe(true);
        expect(out).toBe(JSON.stringify(zod.data));
      } else {
        expect(out).toBe(UNSURE);
      }
    }
    expect(written_).toBeGreaterThan(50);
  });
});
