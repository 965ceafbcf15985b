import { defineConfig } from 'vitest/config';

/**
 * Test files whose threads spin on every core (the partition core's race tests): they run after the others,
 * alone. Run beside the rest of the suite on a 2-core machine they starved (a 13-second test timed out at 60).
 */
const EXCLUSIVE = ['test/native/core-races.test.ts'];

export default defineConfig({
  test: {
    testTimeout: 30_000,
    hookTimeout: 60_000,
    pool: 'forks',
    reporters: ['default'],
    projects: [
      {
        extends: true,
        test: {
          name: 'main',
          include: ['test/**/*.test.ts', 'transports/**/*.test.ts', 'benchmarking/**/*.test.ts', 'native/**/*.test.ts', 'examples/**/*.test.ts'],
          exclude: [...EXCLUSIVE, '**/node_modules/**'],
          sequence: { groupOrder: 0 },
        },
      },
      {
        extends: true,
        test: {
          name: 'exclusive',
          include: EXCLUSIVE,
          fileParallelism: false,
          sequence: { groupOrder: 1 },
        },
      },
    ],
  },
});
