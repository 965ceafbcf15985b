/**
 * `bus.idle()`'s own checks, whatever the transport: bad options, an unknown type, a closed bus, a transport
 * that cannot tell (noop), and a bus with no subscriptions. Its waiting is covered by the conformance suite
 * (memory, native main thread, JS core, Redis) and test/native/idle.test.ts (worker threads).
 */
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { ClosedError, ConfigError, createEventBus, defineEvents, UnknownEventError } from '../../src/index.js';

const events = defineEvents({ 'job.done': z.object({ n: z.number() }) });

describe('bus.idle()', () => {
  it('resolves at once for a bus without subscriptions, after sending what is buffered', async () => {
    const bus = await createEventBus({ service: 's', events, transport: { type: 'memory' }, batching: { maxWaitMs: 60_000, maxEvents: 1000 } });
    const p = bus.publish('job.done', { n: 1 });
    await bus.idle({ timeoutMs: 1000 });
    expect(bus.stats().events).toBe(1); // the lingering batch was flushed
    await p;
    await bus.close();
  });

  it('names a bad option, rejects an unknown type, and a closed bus', async () => {
    const bus = await createEventBus({ service: 's', events, transport: { type: 'memory' } });
    await expect(bus.idle({ timeoutMs: -1 })).rejects.toMatchObject({ name: 'ConfigError', message: expect.stringContaining('timeoutMs') });
    await expect(bus.idle({ bogus: 1 } as never)).rejects.toBeInstanceOf(ConfigError);
    await expect(bus.idle({ type: 'job.lost' as never })).rejects.toBeInstanceOf(UnknownEventError);
    await bus.close();
    await expect(bus.idle()).rejects.toBeInstanceOf(ClosedError);
  });

  it('is a ConfigError on a transport that keeps no consumer groups (noop)', async () => {
    const bus = await createEventBus({ service: 's', events, transport: { type: 'noop' } });
    await expect(bus.idle()).rejects.toMatchObject({ name: 'ConfigError', message: expect.stringContaining('noop') });
    await bus.close();
  });
});
