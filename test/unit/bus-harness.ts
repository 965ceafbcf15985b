/** What the createEventBus unit tests share: an event map, and a publish-only transport whose `write` is the test's. */
import { z } from 'zod';
import { defineEvents } from '../../src/index.js';
import type { PublishUnit, Transport } from '../../src/transport-kit.js';

export const events = defineEvents({
  'user.signed-up': z.object({ userId: z.string(), email: z.string().email() }),
  'blob.stored': z.object({ name: z.string(), meta: z.unknown() }),
});

/** A publish-only transport for the batching tests: `write` is the test's. */
export function writeOnly(type: string, maxInFlight: number, write: (units: readonly PublishUnit[]) => Promise<void> | void): Transport {
  return {
    type,
    capabilities: { encoding: 'none', maxInFlight, maxEventBytes: Number.MAX_SAFE_INTEGER },
    async connect() {},
    partitionsFor: () => 1,
    async write(units: readonly PublishUnit[]) {
      await write(units);
    },
    async subscribe() {
      throw new Error('not used');
    },
    async close() {},
  } as Transport;
}
