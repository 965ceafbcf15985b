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

  it("waits for a handler's publish lingering in the batch (batching.maxWaitMs), and its handling", async () => {
    const bus = await createEventBus({ service: 's', events, transport: { type: 'memory' }, batching: { maxWaitMs: 200 } });
    const sent: number[] = [];
    await bus.subscribe('job.done', { group: 'jobs' }, async (e) => {
      if (e.data.n !== 1) return void sent.push(e.data.n);
      await new Promise((r) => setTimeout(r, 20)); // some work
      void bus.publish('job.done', { n: 2 }); // then the next step, not awaited
    });
    await bus.publish('job.done', { n: 1 });
    // idle() counts what handlers publish while it waits: n: 2, buffered after its first flush, is sent too.
    await bus.idle({ timeoutMs: 5000 });
    expect(sent).toEqual([2]);
    expect(bus.stats().pendingEvents).toBe(0);
    await bus.close();
  });

  it('rejects with ClosedError when close() runs while it waits (close drops what was not handled)', async () => {
    const bus = await createEventBus({ service: 's', events, transport: { type: 'memory' }, drainTimeoutMs: 100 });
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    await bus.subscribe('job.done', { group: 'jobs' }, () => gate);
    await bus.publishMany('job.done', [{ n: 1 }, { n: 2 }, { n: 3 }]);
    const waiting = bus.idle({ timeoutMs: 10_000 });
    await new Promise((r) => setTimeout(r, 20));
    const closed = bus.close();
    // A subscription closed while idle() waits rejects it: its unhandled events are not taken as handled.
    await expect(waiting).rejects.toBeInstanceOf(ClosedError);
    release();
    await closed;
  });

  it('timeoutMs 0 on an idle bus resolves (one more look after a quiet one)', async () => {
    const bus = await createEventBus({ service: 's', events, transport: { type: 'memory' } });
    await bus.subscribe('job.done', { group: 'jobs' }, () => {});
    await bus.idle({ timeoutMs: 0 });
    await bus.publish('job.done', { n: 1 });
    await bus.idle({ timeoutMs: 0 });
    await bus.close();
  });

  it('is a ConfigError on a transport that keeps no consumer groups (noop)', async () => {
    const bus = await createEventBus({ service: 's', events, transport: { type: 'noop' } });
    await expect(bus.idle()).rejects.toMatchObject({ name: 'ConfigError', message: expect.stringContaining('noop') });
    await bus.close();
  });
});
