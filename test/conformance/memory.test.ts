import { describeConformance } from './suite.js';
import { uniqueName } from '../helpers/wait.js';

describeConformance({
  name: 'memory',
  transport: () => ({ type: 'memory', partitions: 4, name: uniqueName('mem') }),
  partitionOwners: { retain: { maxLen: 10_000 } },
});
