/** stringifyAnyDepth writes what JSON.stringify writes, at any depth. */
import { describe, expect, it } from 'vitest';
import { stringifyAnyDepth, stringifyIteratively } from '../../src/deep-json.js';

describe('stringifyAnyDepth', () => {
  it('writes what JSON.stringify writes for ordinary values', () => {
    const values: unknown[] = [
      null,
      0,
      -1.5,
      1e21,
      NaN,
      Infinity,
      true,
      'a"b\\c\u2028\ud800',
      [],
      {},
      [1, undefined, () => 1, Symbol('s'), null],
      { a: 1, b: undefined, c: () => 1, d: [{ e: 'x' }, []], f: { g: { h: null } }, '': 2, 'k"': new Date(0) },
      new Date(86_400_000),
      { toJSON: () => ({ replaced: true }) },
      [[[[]]]],
      { a: [{}, { b: [] }] },
    ];
    values.forEach((v, i) => expect(stringifyIteratively(v), `value ${i}`).toBe(JSON.stringify(v)));
    expect(stringifyIteratively(undefined)).toBe(JSON.stringify(undefined));
  });

  it('writes a value nested deeper than JSON.stringify of Node 20 can (a RangeError there), which JSON.parse reads back', () => {
    const depth = 200_000;
    const text = `${'[{"a":'.repeat(depth)}1${'}]'.repeat(depth)}`;
    const value = JSON.parse(text) as unknown;
    // Node 26's JSON.stringify writes it too; on the lines whose JSON.stringify recurses it throws.
    const native = (() => {
      try {
        return JSON.stringify(value);
      } catch (err) {
        return err;
      }
    })();
    expect(native === text || native instanceof RangeError).toBe(true);
    expect(stringifyAnyDepth(value)).toBe(text);
  });

  it('refuses circular values and BigInt as JSON.stringify does', () => {
    const c: Record<string, unknown> = {};
    c['self'] = c;
    expect(() => stringifyIteratively(c)).toThrow(TypeError);
    expect(() => stringifyIteratively({ n: 1n })).toThrow(TypeError);
    // The same object twice (not a cycle) is fine.
    const shared = { x: 1 };
    expect(stringifyIteratively([shared, shared])).toBe('[{"x":1},{"x":1}]');
  });
});
