import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { createEventBus, defineEvents, registerTransport, SerializationError } from '../../src/index.js';
import type { PublishUnit, Transport } from '../../src/transport-kit.js';

/**
 * A transport that encodes at write time, as `redis-streams` does: the bus hands it unencoded events of
 * schemas it proved JSON-encodable (`needsEncodeCheck`), and it writes `ctx.serializer(type)(data)`.
 */
const written: string[] = [];
registerTransport('review-encode-later', (_config, ctx) => {
  const t: Transport = {
    type: 'review-encode-later',
    capabilities: { encoding: 'none', maxInFlight: 1, maxEventBytes: Number.MAX_SAFE_INTEGER },
    connect: async () => {},
    partitionsFor: () => 1,
    write: async (units: readonly PublishUnit[]) => {
      for (const u of units) for (const ev of u.events) written.push('[' + (ev.json ?? ctx.serializer(u.type)(ev.data)) + ']');
    },
    subscribe: async () => ({ close: async () => {} }),
    close: async () => {},
  };
  return t;
});

/** A transport that takes events encoded at publish (`encoding: 'json'`): the bus fills `event.json`. */
registerTransport('review-encode-now', () => {
  const t: Transport = {
    type: 'review-encode-now',
    capabilities: { encoding: 'json', maxInFlight: 1, maxEventBytes: Number.MAX_SAFE_INTEGER },
    connect: async () => {},
    partitionsFor: () => 1,
    write: async () => {},
    subscribe: async () => ({ close: async () => {} }),
    close: async () => {},
  };
  return t;
});

describe('payloads JSON cannot carry', () => {
  // `.optional()` at the top of a schema lets `undefined` through: JSON.stringify(undefined) is no JSON text.
  const events = defineEvents({ maybe: z.string().optional(), maybeNull: z.string().optional().nullable() });

  it('an undefined payload is refused at publish on every transport, as on one that encodes at publish', async () => {
    for (const transport of [{ type: 'review-encode-now' }, { type: 'memory' }, { type: 'review-encode-later' }]) {
      const bus = await createEventBus({ service: 's', events, transport });
      await expect(bus.publish('maybe', undefined), transport.type).rejects.toBeInstanceOf(SerializationError);
      await expect(bus.publishMany('maybeNull', ['a', undefined]), transport.type).rejects.toBeInstanceOf(SerializationError);
      await bus.publish('maybe', 'x');
      await bus.publish('maybeNull', null);
      await bus.close();
    }
    // What reached the transport that encodes later is JSON.
    for (const text of written) expect(() => JSON.parse(text), text).not.toThrow();
    expect(written).toEqual(['["x"]', '[null]']);
  });
});

describe('JSON-safety is judged per use of a sub-schema', () => {
  it('a schema used twice side by side is still proven safe (not encoded eagerly); one inside itself is not', () => {
    const address = z.object({ street: z.string(), city: z.string() });
    type Tree = { name: string; children: Tree[] };
    const tree: z.ZodType<Tree> = z.object({
      name: z.string(),
      get children() {
        return z.array(tree);
      },
    });
    const events = defineEvents({ moved: z.object({ from: address, to: address }), tree });
    expect(events.needsEncodeCheck.has('moved')).toBe(false);
    expect(events.needsEncodeCheck.has('tree')).toBe(true);
  });
});
