import { uniqueName } from '../helpers/wait.js';
import { describeConformance } from './suite.js';

// The addon (test/native asserts that it loads here, so this is not silently the fallback).
describeConformance({
  name: 'native (addon)',
  transport: () => ({ type: 'native', name: uniqueName('native'), partitions: 4, capacity: 4096, implementation: 'native' }),
  partitionOwners: { retain: { retain: 10_000 } },
});

describeConformance({
  name: 'native (JS fallback)',
  transport: () => ({ type: 'native', name: uniqueName('native-js'), partitions: 4, capacity: 4096, implementation: 'js' }),
  partitionOwners: { retain: { retain: 10_000 } },
});
