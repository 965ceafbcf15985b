import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { compileJsonWriter, NEEDS_STRING, NO_ROOM } from '../../src/json-writer.js';
import { nested as sharedNested, trade, writtenAfterPrefix } from '../helpers/schemas.js';

const nested = sharedNested.extend({ nil: z.null().optional() });
const allOptional = z.object({ a: z.string().optional(), b: z.number().optional(), c: z.boolean().optional() });

/** The writer's bytes for a parsed value, or NEEDS_STRING; written after a prefix it must not touch. */
function written(schema: z.ZodType, value: unknown, room = 1 << 16): string | number {
  return writtenAfterPrefix(compileJsonWriter(schema)!, value, room);
}

/** Every string value inside `v`. */
function strings(v: unknown): string[] {
  if (typeof v === 'string') return [v];
  if (v === null || typeof v !== 'object') return [];
  return Object.values(v).flatMap(strings);
}

function same(schema: z.ZodType, input: unknown) {
  const value = schema.parse(input);
  expect(written(schema, value)).toBe(JSON.stringify(value));
}

/**
 * Checks that `{ v }` is written as JSON.stringify writes it; `expect` only on a mismatch (hundreds of
 * thousands of values per test).
 */
function numberChecker(): (v: number) => void {
  const w = compileJsonWriter(z.object({ v: z.number() }))!;
  const buf = Buffer.alloc(64);
  return (v) => {
    const end = w({ v }, buf, 0);
    if (buf.toString('latin1', 0, end) !== JSON.stringify({ v })) expect(buf.toString('latin1', 0, end)).toBe(JSON.stringify({ v }));
  };
}

describe('compileJsonWriter', () => {
  it('writes the bytes of JSON.stringify for parsed values', () => {
    same(trade, { id: 1, sym: 'AAPL', px: 150.25, qty: 100 });
    same(trade, { id: -0, sym: '', px: 1e21, qty: -12_345_678_901_234 });
    same(trade, { id: 999_999_999_999_999, sym: 'x'.repeat(33), px: -1.5e-7, qty: 1e15 });
    same(nested, { when: 1, tags: [], side: 'buy', kind: 'limit', flag: false, note: null, 'we"ird key': '' });
    same(nested, {
      opt: 'x',
      when: 1.5,
      tags: ['a', 'b'],
      side: 'sell',
      kind: 'limit',
      flag: true,
      note: 'n',
      maybe: { a: 2, b: [{}, { c: true }] },
      dflt: 7,
      nil: null,
      'we"ird key': 'k',
      stripped: 'unknown keys are dropped by parse',
    });
    same(z.object({ n: z.enum({ A: 0, B: 1 }), m: z.enum({ X: 'x', Y: 2 }) }), { n: 1, m: 2 });
    same(z.object({ n: z.enum({ A: 0, B: 1 }), m: z.enum({ X: 'x', Y: 2 }) }), { n: 0, m: 'x' });
    same(allOptional, {});
    same(allOptional, { b: 2 });
    same(allOptional, { a: 'x', c: false });
  });

  it('writes integers as JSON.stringify does at every digit count and sign', () => {
    const n = z.object({ v: z.number() });
    const values = [0, -0, 2 ** 31 - 1, -(2 ** 31) + 1, 2 ** 31, -(2 ** 31)];
    for (let p = 1; p <= 1e9; p *= 10) values.push(p - 1, p, p + 1, -p, -(p - 1), 2 * p - 1);
    for (const v of values) same(n, { v });
  });

  it('writes integers from 2^31 to 2^53 (timestamps) digit by digit as JSON.stringify does, past them through String', () => {
    const check = numberChecker();
    const edges = [2 ** 31, 2 ** 31 + 1, 2 ** 32, Date.now(), 1_732_700_000_000, 2 ** 53 - 1, Number.MAX_SAFE_INTEGER - 99_999_999, 2 ** 53, 2 ** 53 + 2, 1e21, 1e22];
    // Around every multiple of 10^8 at each magnitude (the split into the digits above the last eight and those).
    for (let p = 1e9; p <= 1e15; p *= 10) for (const d of [-100_000_001, -100_000_000, -99_999_999, -1, 0, 1, 99_999_999]) edges.push(p + d, 3 * p + d, 9 * p + d);
    for (let k = 21; k < 90_071_992; k += 1_234_567) edges.push(k * 1e8 - 1, k * 1e8, k * 1e8 + 1, k * 1e8 + 12_345);
    for (const v of edges) {
      check(v);
      check(-v);
    }
    for (let i = 0; i < 200_000; i++) {
      const v = 2 ** 31 + Math.floor(Math.random() * (2 ** 53 - 2 ** 31));
      check(v);
      check(-v);
    }
  });

  it('writes decimals as JSON.stringify does: short ones digit by digit, the rest through String', () => {
    const check = numberChecker();
    const fixed = [
      0.1,
      0.2,
      0.1 + 0.2,
      1.1,
      150.25,
      0.05,
      0.000001,
      0.0000015,
      1e-7,
      2.5e-7,
      0.999999,
      0.9999995,
      2147483647.5,
      -2147483647.5,
      2147483648.5,
      1073741824.000001,
      4.35,
      1.005,
      123456.789012,
      9007199254740.5,
    ];
    for (const v of fixed) {
      check(v);
      check(-v);
    }
    // Random decimals of every digit count 1..8 and magnitude, and random doubles (String's path).
    for (let i = 0; i < 200_000; i++) {
      const k = 1 + (i % 8);
      const whole = Math.floor(Math.random() * 10 ** (i % 11));
      const v = whole + Math.floor(Math.random() * 10 ** k) / 10 ** k;
      check(v);
      check(-v);
      check(Math.random() * 10 ** ((i % 14) - 4));
    }
  });

  it('matches JSON.stringify on random values, or asks for the string encoder when a string needs it', () => {
    const chars = 'aZ09 ~!"\\\n\t\u0001\u007fé☃😀';
    const str = () => Array.from({ length: Math.floor(Math.random() * (Math.random() < 0.2 ? 80 : 12)) }, () => chars[Math.floor(Math.random() * chars.length)]).join('');
    let fallbacks = 0;
    for (let i = 0; i < 3000; i++) {
      const value = nested.parse({
        opt: Math.random() < 0.5 ? str() : undefined,
        when: (Math.random() - 0.5) * 10 ** Math.floor(Math.random() * 30) * (Math.random() < 0.5 ? 1 : 1e-20),
        tags: Array.from({ length: Math.floor(Math.random() * 3) }, str),
        side: Math.random() < 0.5 ? 'buy' : 'sell',
        kind: 'limit',
        flag: Math.random() < 0.5,
        note: Math.random() < 0.3 ? null : str(),
        maybe: Math.random() < 0.5 ? undefined : { a: Math.round(Math.random() * 1e6) * (Math.random() < 0.5 ? -1 : 1), b: [{ c: Math.random() < 0.5 ? undefined : true }] },
        'we"ird key': str(),
      });
      const out = written(nested, value);
      const json = JSON.stringify(value);
      if (out === NEEDS_STRING) {
        fallbacks++;
        expect(strings(value).some((x) => !/^[\x20\x21\x23-\x5b\x5d-\x7e]*$/.test(x))).toBe(true);
      } else expect(out).toBe(json);
    }
    expect(fallbacks).toBeGreaterThan(0);
    expect(fallbacks).toBeLessThan(3000);
  });

  it('reports NO_ROOM instead of writing past the buffer, at every size', () => {
    const value = nested.parse({ opt: 'o', when: 2.5, tags: ['t1', 't2'], side: 'buy', kind: 'limit', flag: true, note: 'n', maybe: { a: 1, b: [{ c: true }] }, 'we"ird key': 'k' });
    const json = JSON.stringify(value);
    const w = compileJsonWriter(nested)!;
    for (let room = 0; room < json.length + 30; room++) {
      const buf = Buffer.alloc(room);
      const end = w(value, buf, 0);
      if (end === NO_ROOM) continue;
      expect(end).toBe(json.length);
      expect(buf.toString('utf8', 0, end)).toBe(json);
    }
    expect(w(value, Buffer.alloc(json.length + 24), 0)).toBe(json.length);
  });

  it('declines schemas it cannot encode exactly, so the caller uses the string encoders', () => {
    expect(compileJsonWriter(z.object({ d: z.date() }))).toBeUndefined();
    expect(compileJsonWriter(z.object({ r: z.record(z.string(), z.number()) }))).toBeUndefined();
    expect(compileJsonWriter(z.object({ u: z.union([z.string(), z.number()]) }))).toBeUndefined();
    expect(compileJsonWriter(z.object({ a: z.string() }).catchall(z.number()))).toBeUndefined();
  });
});
