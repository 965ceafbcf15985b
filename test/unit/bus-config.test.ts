import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { ConfigError, createEventBus, defineEvents, registerTransport, UnknownTransportError } from '../../src/index.js';
import type { PublishUnit, Transport } from '../../src/transport-kit.js';
import { events } from './bus-harness.js';

describe('createEventBus config validation', () => {
  it('names the bad field', async () => {
    await expect(createEventBus({ service: '', events, transport: { type: 'memory' } })).rejects.toMatchObject({
      code: 'ERR_CONFIG',
      message: expect.stringContaining('service'),
    });
    await expect(createEventBus({ service: 's', events, transport: { type: 'memory' }, batching: { maxEvents: 0 } })).rejects.toMatchObject({ message: expect.stringContaining('batching.maxEvents') });
    await expect(createEventBus({ service: 's', events, transport: { type: 'memory', partitions: -1 } })).rejects.toMatchObject({
      message: expect.stringContaining('transport.partitions'),
    });
    await expect(
      // @ts-expect-error not an option of the memory transport (refused at compile time too)
      createEventBus({ service: 's', events, transport: { type: 'memory', bogus: 1 } }),
    ).rejects.toBeInstanceOf(ConfigError);
  });

  it('rejects an unknown transport type listing the registered ones', async () => {
    const err = await createEventBus({ service: 's', events, transport: { type: 'carrier-pigeon' } }).catch((e) => e);
    expect(err).toBeInstanceOf(UnknownTransportError);
    expect(err.message).toContain('memory');
  });

  it('rejects an event map not made by defineEvents, and bad schemas', async () => {
    await expect(createEventBus({ service: 's', events: {} as never, transport: { type: 'memory' } })).rejects.toBeInstanceOf(ConfigError);
    expect(() => defineEvents({ 'bad name!': z.string() })).toThrow(ConfigError);
    expect(() => defineEvents({ ok: 'not a schema' as never })).toThrow(/zod/);
  });
});

describe('transport registry', () => {
  it('lets a third-party transport register itself and be picked by config', async () => {
    const written: PublishUnit[] = [];
    let plan: unknown;
    registerTransport('recording', (config, ctx) => {
      plan = ctx.readerPlan?.('user.signed-up');
      const t: Transport = {
        type: 'recording',
        capabilities: { encoding: 'json', maxInFlight: 1, maxEventBytes: 1 << 20 },
        connect: async () => {},
        partitionsFor: () => Number(config.partitions ?? 1),
        write: async (units) => {
          written.push(...units);
        },
        subscribe: async () => ({ close: async () => {} }),
        close: async () => {},
      };
      return t;
    });
    const bus = await createEventBus({ service: 'svc', events, transport: { type: 'recording', partitions: 3 } });
    await bus.publish('user.signed-up', { userId: 'u1', email: 'a@b.co' }, { key: 'u1' });
    await bus.close();
    expect(written).toHaveLength(1);
    expect(written[0]!.events[0]).toMatchObject({ type: 'user.signed-up', json: '{"userId":"u1","email":"a@b.co"}', key: 'u1' });
    expect(written[0]!.partition).toBeLessThan(3);
    // The type's payload reader plan, for transports that parse payload JSON (src/json-reader.ts).
    expect(plan).toMatchObject({ t: 'object', fields: [{ key: 'userId' }, { key: 'email' }] });
  });
});

describe('logging', () => {
  it('uses an injected logger', async () => {
    const lines: { obj: object; msg?: string }[] = [];
    const log = (obj: object, msg?: string) => void lines.push({ obj, msg });
    const logger = { debug: log, info: log, warn: log, error: log };
    const bus = await createEventBus({ service: 's', events, transport: { type: 'memory' }, logger });
    await bus.close();
    expect(lines.some((l) => l.msg === 'event bus closed')).toBe(true);
  });
});
