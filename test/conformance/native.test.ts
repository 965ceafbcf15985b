import * as vitest from 'vitest';
import { describeConformance, uniqueName } from '../../src/conformance/index.js';
import { subscribeInWorkers } from './worker-bridge.js';

// The addon (test/native asserts that it loads here, so this is not silently the fallback).
describeConformance(vitest, {
  name: 'native (addon)',
  transport: () => ({ type: 'native', name: uniqueName('native'), partitions: 4, capacity: 4096, implementation: 'native' }),
  partitionOwners: { retain: { maxLen: 10_000 } },
});

describeConformance(vitest, {
  name: 'native (JS fallback)',
  transport: () => ({ type: 'native', name: uniqueName('native-js'), partitions: 4, capacity: 4096, implementation: 'js' }),
  partitionOwners: { retain: { maxLen: 10_000 } },
});

// Worker-thread subscriptions of one thread each (`concurrency` counts per thread): the thread pops, checks
// the schema, applies the delivery rules and settles; the tests' handlers run on the main thread behind a
// bridge module. Not the test of several members subscribing together (partitionOwners): a worker member's
// threads start consuming once loaded, before the next member joins.
describeConformance(vitest, {
  name: 'native worker threads (addon)',
  transport: () => ({ type: 'native', name: uniqueName('native-w'), partitions: 4, capacity: 4096, implementation: 'native' }),
  subscribeVia: (bus, type, options, handler) => subscribeInWorkers(1, bus, type, options, handler),
});

describeConformance(vitest, {
  name: 'native worker threads (JS fallback)',
  transport: () => ({ type: 'native', name: uniqueName('native-wjs'), partitions: 4, capacity: 4096, implementation: 'js' }),
  subscribeVia: (bus, type, options, handler) => subscribeInWorkers(1, bus, type, options, handler),
});
