/// <reference types="node" preserve="true" />
// The declarations use Node's types: found where the consumer's tsconfig lists none.
/**
 * `eventlane/conformance`: the delivery contract as a test suite a transport author runs on their transport
 * (docs/writing-a-transport.md). It takes the test runner's functions from the caller and imports none, so
 * neither this entry nor `eventlane` loads a test runner:
 *
 *     import * as vitest from 'vitest';
 *     import { describeConformance, uniqueName } from 'eventlane/conformance';
 *     describeConformance(vitest, { name: 'my-queue', transport: () => ({ type: 'my-queue', name: uniqueName('q') }) });
 */
export { describeConformance, conformanceCases } from './suite.js';
export type { ConformanceTarget, ConformanceKit, ConformanceCase, TargetBlock, OrderHandler } from './kit.js';
export type { ConformanceTestApi, ConformanceExpect, ConformanceMatchers, AnyConstructor } from './test-api.js';
export { conformanceEvents, type ConformanceBus, type Order } from './events.js';
export { uniqueName } from './wait.js';
