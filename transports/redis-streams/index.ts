export { createRedisStreamsTransport, openRedisStreamsAdmin, RedisStreamsTransport } from './transport.js';
export { RedisStreamsAdmin, decodeDeadLetter, type RedisDeadLetter, type StreamInfo, type GroupInfo, type PendingInfo } from './admin.js';
export { redisStreamsConfigSchema, redisSubscribeSchema, type RedisStreamsConfig, type RedisSubscribeOptions } from './config.js';
export { streamKey, dlqKey, retryKey } from './keys.js';
export { WIRE_VERSION, decodeEntry } from './codec.js';
