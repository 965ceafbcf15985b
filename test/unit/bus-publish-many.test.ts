import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { ConfigError, createEventBus, defineEvents, PublishPartialError, registerTransport, TransportError } from '../../src/index.js';
import type { PublishUnit, Transport } from '../../src/transport-kit.js';
import { writeOnly } from './bus-harness.js';

describe('publishMany backpressure', () => {
  const evs = defineEvents({ n: z.object({ i: z.number().int() }) });

  /** Writes take a few ms; records the most events buffered at once. */
  function slowTransport(counter: { max: number; written: number; bus?: { stats(): { pendingEvents: number } } }): Transport {
    return writeOnly('slow', 2, async (units) => {
      counter.max = Math.max(counter.max, counter.bus?.stats().pendingEvents ?? 0);
      await new Promise((r) => setTimeout(r, 2));
      for (const u of units) counter.written += u.events.length;
    });
  }

  it("paces a call larger than maxPendingEvents slice by slice ('wait'), and with many calls at once", async () => {
    const counter = { max: 0, written: 0 } as { max: number; written: number; bus?: { stats(): { pendingEvents: number } } };
    registerTransport('slow-pacing', async () => slowTransport(counter));
    const bus = await createEventBus({ service: 's', events: evs, transport: { type: 'slow-pacing' }, batching: { maxEvents: 500, maxPendingEvents: 2_000 } });
    counter.bus = bus;
    const big = Array.from({ length: 30_000 }, (_, i) => ({ i }));
    await Promise.all([bus.publishMany('n', big), bus.publishMany('n', big.slice(0, 5_000)), bus.publish('n', { i: -1 })]);
    expect(counter.written).toBe(35_001);
    expect(counter.max).toBeLessThanOrEqual(2_000 + 500);
    await bus.close();
  });

  it("refuses a call that does not fit up front ('reject'): nothing of it is sent", async () => {
    const counter = { max: 0, written: 0 };
    registerTransport('slow-reject', async () => slowTransport(counter));
    const bus = await createEventBus({ service: 's', events: evs, transport: { type: 'slow-reject' }, batching: { maxEvents: 100, maxPendingEvents: 1_000, onFull: 'reject' } });
    const first = Promise.all(Array.from({ length: 800 }, (_, i) => bus.publish('n', { i }))); // 800 buffered now
    const err = await bus
      .publishMany(
        'n',
        Array.from({ length: 300 }, (_, i) => ({ i })),
      )
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(Error);
    expect((err as { code: string }).code).toBe('ERR_BACKPRESSURE');
    expect((err as Error).message).toMatch(/300 events do not fit.*nothing was sent/);
    await first;
    await bus.flush();
    expect(counter.written).toBe(800);
    await bus.close();
  });
});

describe('batching.maxBytes when the transport encodes at write time', () => {
  it('bounds units by the schema-compiled size estimate', async () => {
    const evs = defineEvents({ doc: z.object({ body: z.string(), n: z.number() }) });
    const sizes: number[] = [];
    registerTransport('late-encoder', async () =>
      writeOnly('late-encoder', 1, (units) => {
        for (const u of units) sizes.push(u.events.length, u.bytes);
      }),
    );
    const bus = await createEventBus({ service: 's', events: evs, transport: { type: 'late-encoder' }, batching: { maxEvents: 1000, maxBytes: 10_000 } });
    await bus.publishMany(
      'doc',
      Array.from({ length: 100 }, (_, n) => ({ body: 'x'.repeat(1000), n })),
    );
    await bus.close();
    const counts = sizes.filter((_, i) => i % 2 === 0);
    const bytes = sizes.filter((_, i) => i % 2 === 1);
    expect(counts.reduce((a, b) => a + b, 0)).toBe(100);
    // each event estimates to ~1,020 bytes: at most 10 per unit under 10,000 bytes
    expect(Math.max(...counts)).toBeLessThanOrEqual(10);
    expect(Math.max(...bytes)).toBeLessThanOrEqual(10_000);
    expect(Math.min(...bytes)).toBeGreaterThan(0);
  });
});

describe('publishMany failing part-way', () => {
  const evs = defineEvents({ n: z.object({ i: z.number().int() }) });

  it.each([1, 3])('names exactly the payloads of the failed units, across slices (%i partitions, round-robin)', async (partitions) => {
    const lost: number[] = [];
    let writes = 0;
    registerTransport(`part-fail-${partitions}`, async () => ({
      ...writeOnly('part-fail', 2, () => {}),
      partitionsFor: () => partitions,
      // Every third write fails its unit of the last partition; the other units of that write are accepted.
      async write(units: readonly PublishUnit[]) {
        await new Promise((r) => setTimeout(r, 1));
        const failing = writes++ % 3 === 0;
        if (!failing) return undefined;
        return units.map((u) => {
          if (u.partition !== partitions - 1) return undefined;
          for (const e of u.events) lost.push((e.data as { i: number }).i);
          return new TransportError(`refused write ${writes}`);
        });
      },
    }));
    const bus = await createEventBus({ service: 's', events: evs, transport: { type: `part-fail-${partitions}` }, batching: { maxEvents: 64 } });
    const payloads = Array.from({ length: 1_000 }, (_, i) => ({ i }));
    const err = await bus.publishMany('n', payloads).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(PublishPartialError);
    const partial = err as PublishPartialError;
    expect(lost.length).toBeGreaterThan(0);
    expect(partial.failed).toEqual([...lost].sort((a, b) => a - b));
    expect(partial.accepted).toBe(1_000 - lost.length);
    expect(partial.errors.map((e) => e.message)).toContain((partial.cause as Error).message);
    expect(partial.message).toMatch(/publishMany\("n"\): \d+ of 1000 events were not written \(refused write \d+\); the other \d+ were/);
    await bus.close();
  });

  it('a failure that is not retryable makes the error not retryable', async () => {
    registerTransport('part-fail-final', async () => ({
      ...writeOnly('part-fail-final', 1, () => {}),
      partitionsFor: () => 2,
      async write(units: readonly PublishUnit[]) {
        return units.map((u) => (u.partition === 0 ? undefined : new ConfigError('no such stream')));
      },
    }));
    const bus = await createEventBus({ service: 's', events: evs, transport: { type: 'part-fail-final' } });
    const err = await bus.publishMany('n', [{ i: 0 }, { i: 1 }, { i: 2 }, { i: 3 }]).catch((e: unknown) => e);
    expect(err).toMatchObject({ code: 'ERR_PUBLISH_PARTIAL', failed: [1, 3], accepted: 2, retryable: false });
    await bus.close();
  });
});
