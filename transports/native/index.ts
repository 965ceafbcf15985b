export { createNativeTransport, NativeTransport } from './native-transport.js';
export { nativeConfigSchema, type NativeTransportConfig } from './config.js';
export { currentThreadCpus, pinCurrentThread } from './affinity.js';
