/** The native transport's configuration and limits: implementation, partitions, capacity, maxEventBytes, groups, payloads, close. */
import { describe, expect, it } from 'vitest';
import { ClosedError, ConfigError, NativeError, PayloadTooLargeError } from '../../src/index.js';
import { waitFor } from '../helpers/wait.js';
import { nativeBuses, transportOf } from './harness.js';

describe.each(['native', 'js'] as const)('native transport (%s)', (implementation) => {
  const bus = nativeBuses(implementation, 'native-test');

  it('uses the requested implementation', async () => {
    const b = await bus();
    expect(transportOf(b).implementation).toBe(implementation);
  });

  it('rejects bad partition counts and capacities with ConfigError naming the field', async () => {
    await expect(bus({ partitions: 0 })).rejects.toBeInstanceOf(ConfigError);
    await expect(bus({ capacity: 1 })).rejects.toThrow(/capacity/);
    await expect(bus({ backpressure: 'sometimes' })).rejects.toThrow(/backpressure/);
    const b = await bus({ capacity: 1000 });
    expect(transportOf(b).core.capacity).toBe(1024);
  });

  it('round-trips non-ASCII payloads, keys, correlation ids and headers', async () => {
    const b = await bus({ partitions: 2 });
    const got: unknown[] = [];
    await b.subscribe('tick', { group: 'u' }, (e) => void got.push({ data: e.data, key: e.key, correlationId: e.correlationId, headers: e.headers }));
    await b.publish('tick', { seq: 1, pad: 'é😀日本\n"' }, { key: 'ключ', correlationId: 'c-1', headers: { traceparent: 'ü' } });
    await b.publish('tick', { seq: 2 });
    await waitFor(() => got.length === 2, 5000, 'two events');
    expect(got).toContainEqual({ data: { seq: 1, pad: 'é😀日本\n"' }, key: 'ключ', correlationId: 'c-1', headers: { traceparent: 'ü' } });
    expect(got).toContainEqual({ data: { seq: 2 }, key: undefined, correlationId: undefined, headers: undefined });
  });

  it('rejects an oversized payload with PayloadTooLargeError and sends nothing', async () => {
    const b = await bus({ capacity: 16 });
    expect(b.transport.capabilities.maxEventBytes).toBe(1024 * 1024);
    await expect(b.publish('tick', { seq: 1, pad: 'x'.repeat(1024 * 1024) })).rejects.toBeInstanceOf(PayloadTooLargeError);
  });

  it('sizes the ring arena for maxEventBytes: four of the largest event', async () => {
    const b = await bus({ capacity: 16, maxEventBytes: 20_000 });
    expect(b.transport.capabilities.maxEventBytes).toBe(20_000);
    expect(transportOf(b).core.arenaBytes).toBe(131_072); // 80,000 rounded up to a power of two
    await b.subscribe('tick', { group: 'g' }, () => {});
    await b.publish('tick', { seq: 1, pad: 'x'.repeat(19_000) });
    await expect(b.publish('tick', { seq: 2, pad: 'x'.repeat(20_000) })).rejects.toBeInstanceOf(PayloadTooLargeError);
  });

  it('refuses a maxEventBytes above the arena of the broker it shares with a ConfigError naming both, rather than capping it', async () => {
    const first = await bus({ capacity: 16, maxEventBytes: 16_384 });
    const name = transportOf(first).config.name;
    await expect(bus({ capacity: 16, maxEventBytes: 20_000, name })).rejects.toThrow(ConfigError);
    await expect(bus({ capacity: 16, maxEventBytes: 20_000, name })).rejects.toThrow(/maxEventBytes 20000 .*65536 bytes: at most 16384.*give that one a maxEventBytes of at least 20000/);
    const b = await bus({ capacity: 16, maxEventBytes: 16_384, name });
    expect(b.transport.capabilities.maxEventBytes).toBe(16_384);
    // Unset, a bus sharing the broker takes what the broker's arena holds.
    const c = await bus({ capacity: 16, name });
    expect(c.transport.capabilities.maxEventBytes).toBe(16_384);
  });

  it('a maxEventBytes above 64 MiB is a ConfigError (its arena would pass 256 MiB, and a pop of a fuller ring could outgrow a JavaScript string)', async () => {
    await expect(bus({ maxEventBytes: 2 ** 26 + 1 })).rejects.toThrow(/transport\.maxEventBytes: must be at most 67108864 \(64 MiB\)/);
  });

  if (implementation === 'native') {
    it('the 4,097th group alive at once in a transport is a NativeError that says why and what to do', async () => {
      const b = await bus({ capacity: 2, maxEventBytes: 256 });
      const t = transportOf(b) as unknown as { createLane(group: string, partitions: number): number };
      const err = await (async () => {
        for (let i = 0; i <= 4096; i++) t.createLane(`g${i}`, 1);
      })().catch((e: unknown) => e);
      expect(err).toBeInstanceOf(NativeError);
      expect((err as Error).message).toMatch(/has 4096 groups alive at once.*deleteGroup.*reuse group names/);
    });
  }

  it('rejects an event whose headers make it larger than maxEventBytes with PayloadTooLargeError', async () => {
    const b = await bus({ capacity: 16, maxEventBytes: 16_384 });
    await b.subscribe('tick', { group: 'g' }, () => {});
    await expect(b.publish('tick', { seq: 1 }, { headers: { big: 'x'.repeat(40_000) } })).rejects.toBeInstanceOf(PayloadTooLargeError);
    await b.publish('tick', { seq: 2 });
  });

  it('rejects publish after close with ClosedError', async () => {
    const b = await bus();
    await b.close();
    await expect(b.publish('tick', { seq: 1 })).rejects.toBeInstanceOf(ClosedError);
  });
});
