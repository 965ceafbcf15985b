import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { createEventBus, defineEvents, registerTransport, type EventBus } from '../../src/index.js';
import type { PublishUnit, Transport } from '../../src/transport-kit.js';

/**
 * An in-process transport with a synchronous write that runs "handlers" inside it, as memory does, and a
 * synchronous `tryWrite`; it wants JSON at publish, so the bus hands each event its encoded payload.
 */
const written: string[] = [];
let duringWrite: (() => void) | undefined;
registerTransport('review-sync-json', () => {
  const t: Transport = {
    type: 'review-sync-json',
    capabilities: { encoding: 'json', maxInFlight: 1, maxEventBytes: Number.MAX_SAFE_INTEGER },
    connect: async () => {},
    partitionsFor: () => 1,
    write: (units: readonly PublishUnit[]) => {
      for (const u of units) for (const ev of u.events) written.push(ev.json!);
      const hook = duringWrite;
      duringWrite = undefined;
      hook?.();
    },
    tryWrite: (unit: PublishUnit) => {
      for (const ev of unit.events) written.push(ev.json!);
      return true;
    },
    subscribe: async () => ({ close: async () => {} }),
    close: async () => {},
  };
  return t;
});

describe('tryPublish', () => {
  it('writes its own payload when flushing what was buffered runs code that publishes', async () => {
    const events = defineEvents({ n: z.object({ n: z.number() }) });
    const bus: EventBus<typeof events> = await createEventBus({ service: 'review', events, transport: { type: 'review-sync-json' } });
    written.length = 0;
    void bus.publish('n', { n: 1 }); // buffered until the flush below
    duringWrite = () => void bus.publish('n', { n: 999 }); // a handler publishing inside the write
    expect(bus.tryPublish('n', { n: 2 })).toBe(true);
    await bus.flush();
    // The handler's event was published before tryPublish wrote its own, so it goes first.
    expect(written).toEqual(['{"n":1}', '{"n":999}', '{"n":2}']);
    await bus.close();
  });
});
