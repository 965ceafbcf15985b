/**
 * A unit written in part (`TransportCapabilities.partialUnits`, an error marked with `withWritten`): each
 * single publish settles with its own event's fate, written events resolve and the rest reject, and the
 * failed-event count is what was not written.
 */
import { describe, expect, it } from 'vitest';
import { Batcher, Lane, type BatcherOptions } from '../../src/batcher.js';
import { BulkCall } from '../../src/bulk-call.js';
import { PublishPartialError, TimeoutError, TransportError } from '../../src/errors.js';
import { withWritten, writtenCount, type OutgoingEvent, type PublishUnit, type WriteResult } from '../../src/transport.js';

const opts: BatcherOptions = { maxEvents: 100, maxUnitEvents: 100, maxBytes: 1 << 20, maxWaitMs: 0, maxInFlight: 1, maxPendingEvents: 10_000, onFull: 'wait', partialUnits: true };

function ev(i: number): OutgoingEvent {
  return { id: String(i), type: 't', time: 0, key: undefined, data: i, json: undefined, partition: 0, correlationId: undefined, causationId: undefined, headers: undefined };
}

/** A write that takes the first `written` events of each unit and fails the rest (synchronously or not). */
function writingPart(written: number, sync: boolean, units: PublishUnit[][]) {
  return (us: readonly PublishUnit[]): Promise<WriteResult> | WriteResult => {
    units.push([...us]);
    const res = us.map(() => withWritten(new TimeoutError('stayed full'), written));
    return sync ? res : Promise.resolve(res);
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

  it('the unit promise (what publishMany tracks) rejects with the marked error; a wrapped error keeps the mark', async () => {
    const plain = new Error('socket reset');
    const b = new Batcher(() => [withWritten(plain, 2)], opts);
    const lane = new Lane('t', 0);
    const ps = [0, 1, 2].map((i) => b.add(lane, ev(i), 0));
    const settled = await Promise.allSettled(ps);
    expect(settled.map((s) => s.status)).toEqual(['fulfilled', 'fulfilled', 'rejected']);
    const reason = (settled[2] as PromiseRejectedResult).reason as Error;
    expect(reason).toBeInstanceOf(TransportError);
    expect(writtenCount(reason)).toBe(2);
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

  it('without partialUnits the publishes of a unit share its promise, and a failed unit fails them all', async () => {
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

describe('a registered transport with partialUnits (eventlane/transport exports withWritten)', () => {
  it('publishMany gets PublishPartialError naming exactly the events its write did not take', async () => {
    const { createEventBus, defineEvents, registerTransport, PublishPartialError } = await import('../../src/index.js');
    const { withWritten: fromRoot } = await import('../../src/transport-kit.js');
    const { z } = await import('zod');
    const taken: number[] = [];
    registerTransport('half-taker', () => ({
      type: 'half-taker',
      capabilities: { encoding: 'none', maxInFlight: 1, maxEventBytes: 1 << 20, partialUnits: true },
      async connect() {},
      async close() {},
      partitionsFor: () => 1,
      write(units) {
        return units.map((u) => {
          const half = Math.floor(u.events.length / 2);
          for (const e of u.events.slice(0, half)) taken.push((e.data as { n: number }).n);
          return fromRoot(new TimeoutError('full'), half);
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
