import * as vitest from 'vitest';
import { describeConformance, uniqueName } from 'eventlane/conformance';
import './my-queue.js';

describeConformance(vitest, {
  name: 'my-queue',
  // Each call names a new broker: the buses of one test share it, no two tests do.
  transport: () => ({ type: 'my-queue', name: uniqueName('my-queue'), partitions: 4 }),
});
