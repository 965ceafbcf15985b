import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { compileJsonReader, jsonReader, readerPlan, type JsonReader } from '../../src/json-reader.js';
import { nested, trade } from '../helpers/schemas.js';

function reader(schema: z.ZodType): JsonReader {
  const plan = readerPlan(schema);
  expect(plan).toBeDefined();
  return compileJsonReader(plan!)!;
}

/** Values equal, with the same key order and the same zeros (-0 vs 0) all the way down. */
function identical(a: unknown, b: unknown): boolean {
  if (typeof a === 'number' || typeof b === 'number') return Object.is(a, b);
  if (a === null || b === null || typeof a !== 'object' || typeof b !== 'object') return a === b;
  if (Array.isArray(a) !== Array.isArray(b) || Object.getPrototypeOf(a) !== Object.getPrototypeOf(b)) return false;
  const ka = Object.keys(a);
  const kb = Object.keys(b);
  if (ka.join('\u0000') !== kb.join('\u0000')) return false;
  return ka.every((k) => identical((a as Record<string, unknown>)[k], (b as Record<string, unknown>)[k]));
}

/** What JSON.parse makes of `json` (value or thrown error), and what the reader makes of it read in place inside other text. */
function both(read: JsonReader, json: string): { want: unknown; got: unknown } {
  const outcome = (f: () => unknown) => {
    try {
      return { value: f() };
    } catch (err) {
      return { error: `${(err as Error).name}: ${(err as Error).message}` };
    }
  };
  // Text around the record that would complete or extend it: the reader must stop at `end`.
  const text = `{"x":1,${json}}]"0123`;
  const start = 7;
  return { want: outcome(() => JSON.parse(json)), got: outcome(() => read(text, start, start + json.length)) };
}

function expectSame(read: JsonReader, json: string): void {
  const { want, got } = both(read, json);
  if (!identical(got, want)) expect({ json, got }).toEqual({ json, got: want });
}

/** A deterministic pseudo-random source (mulberry32). */
function rng(seed: number): () => number {
  return () => {
    seed = (seed + 0x6d2b79f5) | 0;
    let t = Math.imul(seed ^ (seed >>> 15), 1 | seed);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** Numbers of every kind the fast path must either read exactly or decline. */
function randomNumber(r: () => number): number {
  switch (Math.floor(r() * 9)) {
    case 0:
      return Math.floor(r() * 1000) - 500;
    case 1:
      return Math.round((r() - 0.5) * 1e6) / 100; // prices
    case 2:
      return (r() - 0.5) * 10 ** Math.floor(r() * 40 - 20); // any magnitude, 17 digits
    case 3:
      return Number((r() * 10 ** Math.floor(r() * 16)).toPrecision(1 + Math.floor(r() * 17))); // 1-17 significant digits
    case 4:
      return [0, -0, 0.1 + 0.2, 1e21, 1e-7, 5e-324, Number.MAX_VALUE, 2 ** 53 + 2, 999_999_999_999_999, 1_000_000_000_000_000][Math.floor(r() * 10)]!;
    case 5:
      return Math.floor(r() * 2 ** 53) * (r() < 0.5 ? -1 : 1);
    case 6:
      return Number((r() * 1000).toFixed(Math.floor(r() * 16)));
    case 7:
      return -Math.round(r() * 1e15) / 10 ** Math.floor(r() * 16);
    default:
      return r() * 1e15;
  }
}

const CHARS = ['a', 'Z', '0', ' ', '"', '\\', '\n', '\u0001', '\u007f', 'é', '€', '😀', '\ud800', '/', '{', ','];
function randomString(r: () => number): string {
  let s = '';
  const n = Math.floor(r() * (r() < 0.8 ? 8 : 48));
  for (let i = 0; i < n; i++) s += r() < 0.7 ? String.fromCharCode(97 + Math.floor(r() * 26)) : CHARS[Math.floor(r() * CHARS.length)]!;
  return s;
}

function randomNested(r: () => number): unknown {
  const v: Record<string, unknown> = {};
  if (r() < 0.5) v['opt'] = randomString(r);
  v['when'] = randomNumber(r);
  v['tags'] = Array.from({ length: Math.floor(r() * 4) }, () => randomString(r));
  v['side'] = r() < 0.5 ? 'buy' : 'sell';
  v['kind'] = 'limit';
  v['flag'] = r() < 0.5;
  v['note'] = r() < 0.3 ? null : randomString(r);
  if (r() < 0.6) v['maybe'] = { a: randomNumber(r), b: Array.from({ length: Math.floor(r() * 3) }, () => (r() < 0.5 ? {} : { c: r() < 0.5 })) };
  v['dflt'] = randomNumber(r);
  v['we"ird key'] = randomString(r);
  return v;
}

describe('readerPlan', () => {
  it('describes the schemas the writers compile', () => {
    expect(readerPlan(trade)).toEqual({
      t: 'object',
      fields: [
        { key: 'id', optional: false, of: { t: 'number' } },
        { key: 'sym', optional: false, of: { t: 'string' } },
        { key: 'px', optional: false, of: { t: 'number' } },
        { key: 'qty', optional: false, of: { t: 'number' } },
      ],
    });
    expect(readerPlan(nested)).toBeDefined();
    expect(readerPlan(z.array(z.number().nullable()))).toEqual({ t: 'array', of: { t: 'nullable', of: { t: 'number' } } });
  });

  it('declines schemas whose JSON it cannot describe', () => {
    expect(readerPlan(z.object({ a: z.union([z.string(), z.number()]) }))).toBeUndefined();
    expect(readerPlan(z.object({ a: z.string() }).passthrough())).toBeUndefined();
    expect(readerPlan(z.object({ a: z.unknown() }))).toBeUndefined();
    expect(readerPlan(z.object({ ['__proto__']: z.string() }))).toBeUndefined();
    const node: z.ZodType = z.lazy(() => z.object({ next: node.nullable() }));
    expect(readerPlan(node)).toBeUndefined();
  });
});

describe('compileJsonReader', () => {
  it('reads what the writers write, in place, exactly as JSON.parse', () => {
    const read = reader(trade);
    for (const json of [
      '{"id":1,"sym":"AAPL","px":150.25,"qty":100}',
      '{"id":-0,"sym":"","px":1e+21,"qty":-12345678901234}',
      '{"id":999999999999999,"sym":"xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx","px":-1.5e-7,"qty":1000000000000000}',
      '{"id":0.30000000000000004,"sym":"€ and 😀","px":9007199254740993,"qty":123456789012345.67}',
      '{"id":0.000001,"sym":"a","px":-0.0,"qty":0.1}',
    ]) {
      expectSame(read, json);
    }
    expect(read('{"id":1,"sym":"AAPL","px":150.25,"qty":100}', 0, 43)).toEqual({ id: 1, sym: 'AAPL', px: 150.25, qty: 100 });
  });

  it('matches JSON.parse on 20,000 random payloads of a rich schema', () => {
    const read = reader(nested);
    const r = rng(42);
    for (let i = 0; i < 20_000; i++) expectSame(read, JSON.stringify(randomNested(r)));
  });

  it('reads every kind of number exactly or leaves it to JSON.parse', () => {
    const read = reader(z.array(z.number()));
    const r = rng(7);
    for (let i = 0; i < 2_000; i++) expectSame(read, JSON.stringify(Array.from({ length: 16 }, () => randomNumber(r))));
    for (const n of ['0', '-0', '1.0', '10.50', '1E5', '1e-5', '00', '01', '-', '1.', '.5', '+1', '0x10', '123456789012345', '1234567890123456', '1.23456789012345', '1.234567890123456']) {
      expectSame(read, `[${n}]`);
    }
  });

  it('gives text written some other way to JSON.parse: same value, same error', () => {
    const read = reader(nested);
    const foreign = [
      '{"when":1,"tags":[],"side":"buy","kind":"limit","flag":true,"note":null,"dflt":3,"we\\"ird key":""}',
      '{ "when": 1, "tags": [], "side": "buy", "kind": "limit", "flag": true, "note": null, "dflt": 3, "we\\"ird key": "" }',
      '{"tags":[],"when":1,"side":"buy","kind":"limit","flag":true,"note":null,"dflt":3,"we\\"ird key":""}',
      '{"when":1,"tags":[],"side":"buy","kind":"limit","flag":true,"note":null,"dflt":3,"we\\"ird key":"","extra":{"deep":[1,2]}}',
      '{"when":1,"when":2,"tags":[],"side":"buy","kind":"limit","flag":true,"note":null,"dflt":3,"we\\"ird key":""}',
      '{"when":"1","tags":["a\\u0041\\n"],"side":"buy","kind":"limit","flag":1,"note":{},"dflt":3,"we\\"ird key":""}',
      '{"opt":"x","when":1,"tags":[],"side":"buy","kind":"limit","flag":true,"note":null,"maybe":{"a":1,"b":[{},{"c":false}]},"dflt":3,"we\\"ird key":""}',
      '{"when":1,"tags":[],"side":"buy","kind":"limit","flag":true,"note":null,"dflt":3,"we\\"ird key":""',
      '{"when":1,"tags":[,],"side":"buy"}',
      '{"when":1,"tags":["more than sixteen characters, then a raw\u0001"],"side":"buy","kind":"limit","flag":true,"note":null,"dflt":3,"we\\"ird key":""}',
      '{"when":1,"tags":["raw\nnewline","raw\u0001"],"side":"buy","kind":"limit","flag":true,"note":null,"dflt":3,"we\\"ird key":""}',
      '{"when":1,"tags":["a"',
      '{"when":tru}',
      '[]',
      '"just a string"',
      'null',
      '',
      'not json',
    ];
    for (const json of foreign) expectSame(read, json);
  });

  it('never reads past the end it is given', () => {
    const read = reader(z.object({ a: z.array(z.number()) }));
    const text = '{"a":[1,2]}';
    for (let end = 0; end < text.length; end++) {
      expect(() => read(text, 0, end)).toThrow(SyntaxError);
    }
    expect(read(text, 0, text.length)).toEqual({ a: [1, 2] });
  });

  it('makes own properties for keys Object.prototype knows, and plain objects', () => {
    const read = reader(z.object({ constructor: z.string(), toString: z.number().optional() }));
    const v = read('{"constructor":"c","toString":1}', 0, 33) as Record<string, unknown>;
    expect(identical(v, JSON.parse('{"constructor":"c","toString":1}'))).toBe(true);
    expect(Object.getPrototypeOf(v)).toBe(Object.prototype);
  });

  it('falls back to JSON.parse without a plan', () => {
    expect(jsonReader(undefined)('xx{"a":1}', 2, 9)).toEqual({ a: 1 });
  });
});
