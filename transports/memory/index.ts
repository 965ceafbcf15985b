export { createMemoryTransport, MemoryTransport, memoryConfigSchema, type MemoryTransportConfig } from './memory-transport.js';
