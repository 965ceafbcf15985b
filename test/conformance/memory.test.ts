import * as vitest from 'vitest';
import { describeConformance, uniqueName } from '../../src/conformance/index.js';

describeConformance(vitest, {
  name: 'memory',
  transport: () => ({ type: 'memory', partitions: 4, name: uniqueName('mem') }),
  partitionOwners: { retain: { maxLen: 10_000 } },
});
