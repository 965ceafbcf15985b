import { expect } from 'vitest';
import { ConfigError } from '../../src/index.js';

/** The ConfigError `run` rejects with (fails the test when it resolves or rejects with anything else). */
export async function configError(run: () => Promise<unknown>): Promise<ConfigError> {
  const err = await run().then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(ConfigError);
  return err as ConfigError;
}
