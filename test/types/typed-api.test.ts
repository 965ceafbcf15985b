/**
 * Compile-time contract: `npm run typecheck` fails if any `@ts-expect-error` below stops being an error,
 * i.e. if a wrong event name or payload would compile. The runtime half is in the conformance suite.
 */
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { createEventBus, defineEvents, type EventBus, type EventEnvelope, type MemoryTransportConfig } from '../../src/index.js';

const events = defineEvents({
  'order.created': z.object({ orderId: z.string(), amount: z.number() }),
  'user.deleted': z.object({ userId: z.string() }),
});

describe('typed API', () => {
  it('types publish, publishMany, tryPublish and handlers from the event map', async () => {
    const bus = await createEventBus({ service: 't', events, transport: { type: 'memory' } });
    await bus.publish('order.created', { orderId: 'o', amount: 1 });
    const codes: string[] = [];
    const code = (e: { code: string }) => void codes.push(e.code);
    // @ts-expect-error unknown event name
    await bus.publish('order.deleted', { orderId: 'o', amount: 1 }).catch(code);
    // @ts-expect-error payload of another event
    await bus.publish('order.created', { userId: 'u' }).catch(code);
    // @ts-expect-error wrong field type
    await bus.publish('order.created', { orderId: 'o', amount: '1' }).catch(code);
    // @ts-expect-error missing field
    await bus.publishMany('order.created', [{ orderId: 'o' }]).catch(code);
    expect(codes).toEqual(['ERR_UNKNOWN_EVENT', 'ERR_VALIDATION', 'ERR_VALIDATION', 'ERR_VALIDATION']);
    expect(bus.tryPublish('user.deleted', { userId: 'u' })).toBe(true);
    // @ts-expect-error wrong field type
    expect(() => bus.tryPublish('user.deleted', { userId: 1 })).toThrow(expect.objectContaining({ code: 'ERR_VALIDATION' }));
    await bus.subscribe('user.deleted', { group: 'g' }, (e) => {
      const id: string = e.data.userId;
      const typed: EventEnvelope<{ userId: string }, 'user.deleted'> = e;
      // @ts-expect-error no such field on this event
      void e.data.orderId;
      void id;
      void typed;
    });
    // Whatever a handler returns or resolves to is ignored: no need to wrap a push or another call's promise.
    const ids: string[] = [];
    await bus.subscribe('user.deleted', { group: 'h1' }, (e) => ids.push(e.data.userId));
    await bus.subscribe('user.deleted', { group: 'h2' }, (e) => Promise.resolve(e.data.userId.length));
    await bus.idle({ type: 'user.deleted', timeoutMs: 5000 });
    // @ts-expect-error idle() of an unknown event name
    await bus.idle({ type: 'order.deleted' }).catch(code);
    expect(codes.at(-1)).toBe('ERR_UNKNOWN_EVENT');
    await bus.close();
  });

  it('types the memory transport block (exported from the root: memory has no subpath)', async () => {
    const transport: MemoryTransportConfig = { type: 'memory', partitions: 2, maxLen: 100 };
    // @ts-expect-error a misspelt option
    const misspelt: MemoryTransportConfig = { type: 'memory', partitons: 2 };
    // @ts-expect-error another transport's type
    const other: MemoryTransportConfig = { type: 'native' };
    void misspelt;
    void other;
    const bus = await createEventBus({ service: 't', events, transport });
    expect(bus.transport.type).toBe('memory');
    await bus.close();
  });

  it("types createEventBus's transport block by its type; other types (registered transports) take any options", async () => {
    // Never called: the calls with @ts-expect-error would throw ConfigError at run time (config-unknown-keys.test.ts).
    const compileOnly = () => {
      // @ts-expect-error a misspelt memory option
      void createEventBus({ service: 't', events, transport: { type: 'memory', partitons: 4 } });
      // @ts-expect-error not a backpressure strategy of the native transport
      void createEventBus({ service: 't', events, transport: { type: 'native', backpressure: 'wait' } });
      // @ts-expect-error a partition count as a string
      void createEventBus({ service: 't', events, transport: { type: 'redis-streams', url: 'redis://127.0.0.1:6379', partitions: '4' } });
      // @ts-expect-error the declared block of a registered transport (below) needs its url
      void createEventBus({ service: 't', events, transport: { type: 'typed-custom' } });
      void createEventBus({ service: 't', events, transport: { type: 'typed-custom', url: 'q://x' } });
      // A registered transport that declared no block: any options.
      void createEventBus({ service: 't', events, transport: { type: 'loose-custom', anything: 1 } });
      // A block whose type is not a literal (read at run time): any options, checked at run time.
      const fromEnv: { type: string; [option: string]: unknown } = { type: process.env['TRANSPORT'] ?? 'memory' };
      void createEventBus({ service: 't', events, transport: fromEnv });
    };
    void compileOnly;
    const bus = await createEventBus({ service: 't', events, transport: { type: 'native', partitions: 2, backpressure: 'drop-oldest', implementation: 'js' } });
    await bus.close();
  });

  it("types subscribe's options by the bus's transport type; a bus of unknown type takes any, checked at run time", async () => {
    const compileOnly = async () => {
      const redis = await createEventBus({ service: 't', events, transport: { type: 'redis-streams', url: 'redis://127.0.0.1:6379' } });
      await redis.subscribe('user.deleted', { group: 'g', concurrency: 4, minIdleMs: 60_000, blockMs: 500, prefetch: 100 }, () => {});
      // @ts-expect-error a misspelt common option
      await redis.subscribe('user.deleted', { group: 'g', concurency: 4 }, () => {});
      // @ts-expect-error a native option on a Redis bus
      await redis.subscribe('user.deleted', { group: 'g', workers: 2 }, () => {});
      // @ts-expect-error a Redis option of the wrong type
      await redis.subscribe('user.deleted', { group: 'g', minIdleMs: '1m' }, () => {});
      const native = await createEventBus({ service: 't', events, transport: { type: 'native' } });
      await native.subscribe('user.deleted', { group: 'g', workers: 2, handler: new URL('file:///h.js'), cpus: [1] });
      // @ts-expect-error a Redis option on a native bus
      await native.subscribe('user.deleted', { group: 'g', minIdleMs: 100 }, () => {});
      const memory = await createEventBus({ service: 't', events, transport: { type: 'memory' } });
      // @ts-expect-error the memory transport has no options of its own
      await memory.subscribe('user.deleted', { group: 'g', blockMs: 100 }, () => {});
      const custom = await createEventBus({ service: 't', events, transport: { type: 'typed-custom', url: 'q://x' } });
      await custom.subscribe('user.deleted', { group: 'g', lane: 'fast' }, () => {});
      // @ts-expect-error the declared subscribe options of a registered transport (below)
      await custom.subscribe('user.deleted', { group: 'g', lane: 3 }, () => {});
      // A bus whose transport type is not a literal, and a registered transport that declared no options: any options.
      const fromEnv: { type: string; [option: string]: unknown } = { type: process.env['TRANSPORT'] ?? 'memory' };
      const loose = await createEventBus({ service: 't', events, transport: fromEnv });
      await loose.subscribe('user.deleted', { group: 'g', minIdleMs: 100, workers: 2 }, () => {});
      const other = await createEventBus({ service: 't', events, transport: { type: 'loose-custom' } });
      await other.subscribe('user.deleted', { group: 'g', anything: 1 }, () => {});
      // A typed bus is an EventBus<M> where one is expected.
      const buses: EventBus<typeof events>[] = [redis, native, memory, loose];
      void buses;
    };
    void compileOnly;
    // What the types stop at compile time, the transport stops at run time, naming the option.
    const bus = await createEventBus({ service: 't', events, transport: { type: 'memory' } });
    const options: Record<string, unknown> = { group: 'g', concurency: 4 };
    await expect(bus.subscribe('user.deleted', options as { group: string }, () => {})).rejects.toMatchObject({ code: 'ERR_CONFIG', message: expect.stringContaining('concurency') });
    await bus.close();
  });
  it('types a delayed publish as resolving with its id (publishMany: the ids); tryPublish takes no delay', async () => {
    const bus = await createEventBus({ service: 't', events, transport: { type: 'memory' }, logger: false });
    const id: string = await bus.publish('user.deleted', { userId: 'u' }, { delayMs: 60_000 });
    const ids: string[] = await bus.publishMany('user.deleted', [{ userId: 'u' }], { deliverAt: new Date(Date.now() + 60_000) });
    // @ts-expect-error an undelayed publish resolves with nothing
    const none: string = await bus.publish('user.deleted', { userId: 'u' });
    // @ts-expect-error tryPublish writes now: no delay
    expect(() => bus.tryPublish('user.deleted', { userId: 'u' }, { delayMs: 5 })).toThrow(expect.objectContaining({ code: 'ERR_CONFIG' }));
    expect(await bus.cancelScheduled('user.deleted', id)).toBe(true);
    expect(ids.length).toBe(1);
    void none;
    await bus.close();
  });
});

declare module '../../src/transport-configs.js' {
  interface TransportConfigs {
    /** A registered transport's declared block (declaration merging, as the README shows). */
    'typed-custom': { type: 'typed-custom'; url: string };
  }
  interface TransportSubscribeOptions {
    /** A registered transport's declared subscribe options. */
    'typed-custom': { lane?: 'fast' | 'slow' };
  }
}
