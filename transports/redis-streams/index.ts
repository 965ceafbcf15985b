/// <reference types="node" preserve="true" />
// The declarations use Node's types (Buffer, URL): this keeps them found where the consumer's tsconfig does not list them
// (`types: []`, TypeScript 6+'s default). preserve="true": TypeScript 5.5+ drops the directive from the .d.ts otherwise.
export { createRedisStreamsTransport, openRedisStreamsAdmin, RedisStreamsTransport } from './transport.js';
export { RedisStreamsAdmin, decodeDeadLetter, type RedisDeadLetter, type StreamInfo, type GroupInfo, type PendingInfo, type ReplaySkipReason } from './admin.js';
export { redisStreamsConfigSchema, redisSubscribeSchema, type RedisStreamsConfig, type RedisSubscribeOptions } from './config.js';
export { streamKey, dlqKey, retryKey } from './keys.js';
export { WIRE_VERSION } from './codec.js';
export { decodeEntry } from './decode-entry.js';
