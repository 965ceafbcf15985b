/**
 * The shared delivery contract against a real redis-server (started by the harness, or REDIS_URL).
 */
import * as vitest from 'vitest';
import { describeConformance } from '../../src/conformance/index.js';
import { RedisServer, uniquePrefix } from '../helpers/redis-server.js';
import type { RedisStreamsTransport } from '../../transports/redis-streams/index.js';

let server: { url: string; stop(): Promise<void> } | undefined;

for (const entryMode of ['batch', 'event'] as const) {
  describeConformance(vitest, {
    name: `redis-streams (${entryMode} entries)`,
    setup: async () => {
      server ??= await RedisServer.startOrExternal();
    },
    teardown: async () => {
      if (entryMode === 'event') {
        await server?.stop();
        server = undefined;
      }
    },
    transport: () => ({
      type: 'redis-streams',
      url: server!.url,
      prefix: uniquePrefix(`conf-${entryMode}`),
      partitions: 4,
      entryMode,
    }),
    subscribeOptions: { blockMs: 200, minIdleMs: 2000 },
    replayDeadLetters: async (bus, type, group) => (await (bus.transport as RedisStreamsTransport).admin()).replayDeadLetters(type, { group }),
    timeoutMs: 15_000,
  });
}
