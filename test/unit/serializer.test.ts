import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { BOUND_PER_ESTIMATE, compileSerializer, compileSizeBound, compileSizeEstimate } from '../../src/serializer.js';
import { nested, trade } from '../helpers/schemas.js';

function same(schema: z.ZodType, input: unknown) {
  const ser = compileSerializer(schema)!;
  const value = schema.parse(input);
  expect(ser(value)).toBe(JSON.stringify(value));
}

describe('compileSerializer', () => {
  it('writes exactly what JSON.stringify writes for parsed values', () => {
    same(trade, { id: 1, sym: 'AAPL', px: 150.25, qty: 100 });
    same(z.object({ n: z.enum({ A: 0, B: 1 }), m: z.enum({ X: 'x', Y: 2 }) }), { n: 1, m: 'x' });
    same(trade, { id: -0, sym: 'quote"back\\slash\nnew ü ☃ \u2028', px: 1e21, qty: 0 });
    same(nested, { when: 1, tags: [], side: 'buy', kind: 'limit', flag: false, note: null, 'we"ird key': '' });
    same(nested, {
      opt: 'x',
      when: 1.5,
      tags: ['a', 'b"'],
      side: 'sell',
      kind: 'limit',
      flag: true,
      note: 'n',
      maybe: { a: 2, b: [{}, { c: true }] },
      dflt: 7,
      'we"ird key': 'k',
      stripped: 'unknown keys are dropped by parse',
    });
  });

  it('matches JSON.stringify on random values', () => {
    const chars = 'aZ09 "\\\n\t\u0001é☃😀';
    const str = () => Array.from({ length: Math.floor(Math.random() * 12) }, () => chars[Math.floor(Math.random() * chars.length)]).join('');
    for (let i = 0; i < 2000; i++) {
      same(nested, {
        opt: Math.random() < 0.5 ? str() : undefined,
        when: (Math.random() - 0.5) * 10 ** Math.floor(Math.random() * 30),
        tags: Array.from({ length: Math.floor(Math.random() * 3) }, str),
        side: Math.random() < 0.5 ? 'buy' : 'sell',
        kind: 'limit',
        flag: Math.random() < 0.5,
        note: Math.random() < 0.3 ? null : str(),
        maybe: Math.random() < 0.5 ? undefined : { a: Math.random(), b: [{ c: Math.random() < 0.5 ? undefined : true }] },
        'we"ird key': str(),
      });
    }
  });

  it('declines schemas it cannot prove, so the caller uses JSON.stringify', () => {
    expect(compileSerializer(z.object({ a: z.unknown() }))).toBeUndefined();
    expect(compileSerializer(z.object({ a: z.date() }))).toBeUndefined();
    expect(compileSerializer(z.record(z.string(), z.number()))).toBeUndefined();
    expect(compileSerializer(z.object({ a: z.string() }).catchall(z.any()))).toBeUndefined();
    expect(compileSerializer(z.object({ a: z.string() }).passthrough())).toBeUndefined();
  });
});

describe('compileSizeBound', () => {
  it('never under-estimates the UTF-8 size of the encoding', () => {
    const bound = compileSizeBound(nested)!;
    const chars = 'a"\\\n\u0001é☃😀\ud800';
    const str = () => Array.from({ length: Math.floor(Math.random() * 40) }, () => chars[Math.floor(Math.random() * chars.length)]).join('');
    for (let i = 0; i < 2000; i++) {
      const value = nested.parse({
        opt: Math.random() < 0.5 ? str() : undefined,
        when: -Math.random() * 10 ** Math.floor(Math.random() * 300),
        tags: Array.from({ length: Math.floor(Math.random() * 5) }, str),
        side: 'sell',
        kind: 'limit',
        flag: true,
        note: Math.random() < 0.3 ? null : str(),
        maybe: Math.random() < 0.5 ? undefined : { a: Math.random(), b: [{ c: true }, {}] },
        'we"ird key': str(),
      });
      expect(bound(value)).toBeGreaterThanOrEqual(Buffer.byteLength(JSON.stringify(value)));
    }
  });

  it('sizes TypeScript enums (numbers) from their values', () => {
    const schema = z.object({ n: z.enum({ A: 0, B: 12345 }), m: z.enum({ X: 'x', Y: 2 }) });
    const value = schema.parse({ n: 12345, m: 'x' });
    const bytes = Buffer.byteLength(JSON.stringify(value));
    expect(compileSizeBound(schema)!(value)).toBeGreaterThanOrEqual(bytes);
    const estimate = compileSizeEstimate(schema)!(value);
    expect(Number.isFinite(estimate)).toBe(true);
    expect(compileSizeBound(schema)!(value)).toBeLessThanOrEqual(estimate * BOUND_PER_ESTIMATE);
  });

  it('declines what it cannot bound', () => {
    expect(compileSizeBound(z.object({ a: z.unknown() }))).toBeUndefined();
    expect(compileSizeBound(z.record(z.string(), z.string()))).toBeUndefined();
  });
});

describe('size estimate vs bound', () => {
  it('the bound never exceeds BOUND_PER_ESTIMATE x the estimate (the bus skips the bound below maxBytes / 6)', () => {
    const schema = z.object({
      s: z.string(),
      n: z.number(),
      b: z.boolean(),
      e: z.enum(['a', 'bcd']),
      l: z.literal('é'),
      o: z.string().optional(),
      x: z.number().nullable(),
      arr: z.array(z.object({ k: z.string(), v: z.number() })),
    });
    const bound = compileSizeBound(schema)!;
    const estimate = compileSizeEstimate(schema)!;
    const values = [
      { s: '', n: 0, b: true, e: 'a', l: 'é', x: null, arr: [] },
      {
        s: 'x'.repeat(1000),
        n: -1.5e300,
        b: false,
        e: 'bcd',
        l: 'é',
        o: 'é😀',
        x: 3,
        arr: [
          { k: '', v: 1 },
          { k: 'kk', v: 2 },
        ],
      },
    ];
    for (const v of values) {
      expect(estimate(v)).toBeGreaterThan(0);
      expect(bound(v)).toBeLessThanOrEqual(BOUND_PER_ESTIMATE * estimate(v));
      expect(bound(v)).toBeGreaterThanOrEqual(Buffer.byteLength(JSON.stringify(v)));
    }
  });
});
