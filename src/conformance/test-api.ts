/**
 * What the conformance suite needs of the test runner, passed in by the caller (`describeConformance(vitest,
 * target)`): the package never imports a test runner. vitest's `describe`, `it`, `expect` and hooks have these
 * shapes; the suite uses no other matcher than those listed here.
 */

/** A class, as `toBeInstanceOf` takes it. */
export type AnyConstructor = abstract new (...args: never[]) => unknown;

/** The matchers the suite calls on `expect(value)`. */
export interface ConformanceMatchers {
  toBe(expected: unknown): void;
  toEqual(expected: unknown): void;
  toMatchObject(expected: object): void;
  toMatch(expected: RegExp | string): void;
  toContain(expected: unknown): void;
  toBeInstanceOf(expected: AnyConstructor): void;
  toBeGreaterThan(expected: number): void;
  toBeGreaterThanOrEqual(expected: number): void;
  toBeLessThan(expected: number): void;
  toBeLessThanOrEqual(expected: number): void;
  /** Matchers on the rejection of a promise. */
  readonly rejects: {
    toBeInstanceOf(expected: AnyConstructor): Promise<void>;
    toMatchObject(expected: object): Promise<void>;
  };
}

/** `expect`, with the asymmetric matchers the suite uses. */
export interface ConformanceExpect {
  (actual: unknown, message?: string): ConformanceMatchers;
  arrayContaining(expected: readonly unknown[]): unknown;
  objectContaining(expected: object): unknown;
}

/** The runner's functions: `import * as vitest from 'vitest'` is one. Timeouts are in milliseconds. */
export interface ConformanceTestApi {
  describe(name: string, body: () => void): unknown;
  it(name: string, body: () => Promise<void>, timeoutMs?: number): unknown;
  beforeAll(fn: () => Promise<void>, timeoutMs?: number): unknown;
  afterEach(fn: () => Promise<void>, timeoutMs?: number): unknown;
  afterAll(fn: () => Promise<void>, timeoutMs?: number): unknown;
  readonly expect: ConformanceExpect;
}
