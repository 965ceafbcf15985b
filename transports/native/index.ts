/// <reference types="node" preserve="true" />
// The declarations use Node's types (Buffer, URL): this keeps them found where the consumer's tsconfig does not list them
// (`types: []`, TypeScript 6+'s default). preserve="true": TypeScript 5.5+ drops the directive from the .d.ts otherwise.
export { createNativeTransport, NativeTransport } from './native-transport.js';
export { nativeConfigSchema, type NativeTransportConfig } from './config.js';
export { currentThreadCpus, pinCurrentThread } from './affinity.js';
