/**
 * A unit written in part (`TransportCapabilities.units.partial`, reported with `WriteSettlement.failed(unit,
 * err, writtenEvents)`): each single publish settles with its own event's fate, written events resolve and the
 * rest reject, and the failed-event count is what was not written.
 */
import { describe, expect, it } from 'vitest';
import { Batcher, Lane, type BatcherOptions } from '../../src/batcher.js';
import { BulkCall } from '../../src/bulk-call.js';
import { PublishPartialError, TimeoutError, TransportError } from '../../src/errors.js';
import type { OutgoingEvent, PublishUnit, WriteResult, WriteSettlement } from '../../src/transport.js';

const opts: BatcherOptions = { maxEvents: 100, maxUnitEvents: 100, maxBytes: 1 << 20, maxWaitMs: 0, maxInFlight: 1, maxPendingEvents: 10_000, onFull: 'wait', partialUnits: true };

function ev(i: number): OutgoingEvent {
  return { id: String(i), type: 't', time: 0, key: undefined, data: i, json: undefined, partition: 0, correlationId: undefined, causationId: undefined, headers: undefined };
}

/**
 * A write that takes the first `written` events of each unit and fails the rest, reported during the write
 * (`sync`) or as its promise settles; its result says nothing of the units, or calls them written (ignored).
 */
function writingPart(written: number, sync: boolean, units: PublishUnit[][]) {
  return (us: readonly PublishUnit[], settle: WriteSettlement): Promise<WriteResult> | WriteResult => {
    units.push([...us]);
    const report = () => us.forEach((_, i) => settle.failed(i, new TimeoutError('stayed full'), written));
    if (sync) return report();
    return Promise.resolve().then(() => {
      report();
      return us.map(() => undefined);
    });
  };
}

describe('Batcher: a unit written in part', () => {
  for (const sync of [true, false]) {
    it(`publishes of one unit: the first ${3} resolve, the others reject (${sync ? 'synchronous' : 'asynchronous'} write)`, async () => {
      const written: PublishUnit[][] = [];
      const b = new Batcher(writingPart(3, sync, written), opts);
      const lane = new Lane('t', 0);
      const ps = Array.from({ length: 8 }, (_, i) => b.add(lane, ev(i), 0));
      const settled = await Promise.allSettled(ps);
      expect(written).toHaveLength(1);
      expect(written[0]![0]!.events).toHaveLength(8); // one unit carried them all
      expect(settled.map((s) => s.status)).toEqual([...Array(3).fill('fulfilled'), ...Array(5).fill('rejected')]);
      for (const s of settled.slice(3)) expect((s as PromiseRejectedResult).reason).toBeInstanceOf(TimeoutError);
      expect(b.stats.failedEvents).toBe(5);
    });
  }

  it('a plain error reported for a unit written in part rejects the rest wrapped in a TransportError', async () => {
    const plain = new Error('socket reset');
    const b = new Batcher((_, settle) => settle.failed(0, plain, 2), opts);
    const lane = new Lane('t', 0);
    const ps = [0, 1, 2].map((i) => b.add(lane, ev(i), 0));
    const settled = await Promise.allSettled(ps);
    expect(settled.map((s) => s.status)).toEqual(['fulfilled', 'fulfilled', 'rejected']);
    const reason = (settled[2] as PromiseRejectedResult).reason as Error;
    expect(reason).toBeInstanceOf(TransportError);
    expect(reason.cause).toBe(plain);
    expect(b.stats.failedEvents).toBe(1);
  });

  it('one error reported for several units with different written counts: each unit keeps its own count', async () => {
    const full = new TimeoutError('stayed full');
    const b = new Batcher((_, settle) => {
      settle.failed(0, full, 1);
      settle.failed(1, full, 2);
    }, opts);
    const lanes = [new Lane('t', 0), new Lane('t', 1)];
    const call = new BulkCall(6, 2, true);
    for (let i = 0; i < 6; i++) call.track(i, i % 2, b.addFitted(lanes[i % 2]!, ev(i), 0), b.placedAt);
    // Unit 0 carries events 0, 2, 4 (its first written), unit 1 events 1, 3, 5 (its first two written).
    const err = call.failure('t', await Promise.allSettled(call.pending));
    expect(err).toBeInstanceOf(PublishPartialError);
    expect((err as PublishPartialError).failed).toEqual([2, 4, 5]);
    expect((err as PublishPartialError).accepted).toBe(3);
    expect(b.stats.failedEvents).toBe(3);
  });

  it('a unit failed in part while the write is still out settles at once and stops counting as pending', async () => {
    let settle!: WriteSettlement;
    let done!: (r: WriteResult) => void;
    const b = new Batcher((_, s) => {
      settle = s;
      return new Promise<WriteResult>((resolve) => (done = resolve));
    }, opts);
    const lane = new Lane('t', 0);
    const ps = [0, 1, 2].map((i) => b.add(lane, ev(i), 0));
    await Promise.resolve();
    expect(b.pendingEvents).toBe(3);
    settle.failed(0, new TimeoutError('stayed full'), 1);
    settle.failed(0, new TimeoutError('again'), 0); // settled already: nothing
    expect(b.pendingEvents).toBe(0);
    const settled = await Promise.allSettled(ps);
    expect(settled.map((s) => s.status)).toEqual(['fulfilled', 'rejected', 'rejected']);
    expect(((settled[1] as PromiseRejectedResult).reason as Error).message).toBe('stayed full');
    done([new TimeoutError('ignored')]); // the result's entry for a settled unit is ignored
    await Promise.resolve();
    expect(b.stats).toMatchObject({ events: 3, failedEvents: 2 });
  });

  it.each([1, 2])('a bulk call whose events sit in one unit on both sides of a publish: written by their place in the unit (%i partitions)', async (partitions) => {
    const b = new Batcher(writingPart(4, true, []), opts);
    const lane = new Lane('t', 0);
    const call = new BulkCall(5, partitions, true);
    const fitted = (i: number) => call.track(i, 0, b.addFitted(lane, ev(i), 0), b.placedAt);
    for (let i = 0; i < 3; i++) fitted(i);
    const single = b.add(lane, ev(100), 0);
    for (let i = 3; i < 5; i++) fitted(i);
    // The unit: call events 0, 1, 2, the publish, call events 3, 4; its first 4 are written.
    await expect(single).resolves.toBeUndefined();
    const err = call.failure('t', await Promise.allSettled(call.pending));
    expect(err).toBeInstanceOf(PublishPartialError);
    expect((err as PublishPartialError).failed).toEqual([3, 4]);
    expect((err as PublishPartialError).accepted).toBe(3);
  });

  it('without units.partial the publishes of a unit share its promise, and a failed unit fails them all', async () => {
    const b = new Batcher(writingPart(3, true, []), { ...opts, partialUnits: false });
    const lane = new Lane('t', 0);
    const ps = Array.from({ length: 5 }, (_, i) => b.add(lane, ev(i), 0));
    expect(new Set(ps).size).toBe(1);
    const settled = await Promise.allSettled(ps);
    expect(settled.every((s) => s.status === 'rejected')).toBe(true);
    // The stat still counts only what was not written.
    expect(b.stats.failedEvents).toBe(2);
  });
});

describe('a registered transport with units.partial', () => {
  it('publishMany gets PublishPartialError naming exactly the events its write did not take', async () => {
    const { createEventBus, defineEvents, registerTransport, PublishPartialError } = await import('../../src/index.js');
    const { z } = await import('zod');
    const taken: number[] = [];
    registerTransport('half-taker', () => ({
      type: 'half-taker',
      capabilities: { encoding: 'none', maxInFlight: 1, maxEventBytes: 1 << 20, units: { partial: true } },
      async connect() {},
      async close() {},
      partitionsFor: () => 1,
      write(units, settle) {
        units.forEach((u, i) => {
          const half = Math.floor(u.events.length / 2);
          for (const e of u.events.slice(0, half)) taken.push((e.data as { n: number }).n);
          settle.failed(i, new TimeoutError('full'), half);
        });
      },
      async subscribe() {
        throw new Error('not here');
      },
    }));
    const bus = await createEventBus({ service: 's', events: defineEvents({ t: z.object({ n: z.number() }) }), transport: { type: 'half-taker' } });
    const err = await bus
      .publishMany(
        't',
        Array.from({ length: 10 }, (_, n) => ({ n })),
      )
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(PublishPartialError);
    expect((err as InstanceType<typeof PublishPartialError>).failed).toEqual([5, 6, 7, 8, 9]);
    expect(taken).toEqual([0, 1, 2, 3, 4]);
    await bus.close();
  });
});
