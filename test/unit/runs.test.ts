/**
 * Runs: a publishMany call's events of one lane handed to a transport without an object per event
 * (`TransportCapabilities.input: { kind: 'runs' }`). Their ids, splitting and settling must be what the per-event path gives.
 */
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { Batcher, Lane, type BatcherOptions } from '../../src/batcher.js';
import { IdGenerator } from '../../src/envelope.js';
import { ClosedError, PublishPartialError, TransportError } from '../../src/errors.js';
import { EventMeta, Run } from '../../src/outgoing.js';
import { createEventBus, defineEvents, registerTransport } from '../../src/index.js';
import type { OutgoingEvent, PublishUnit, Transport, WriteResult } from '../../src/transport.js';

const seqOf = (g: IdGenerator) => g as unknown as { seq: number; node: string };

describe('IdGenerator.reserve', () => {
  it('reserves the ids `next` would have made, across 2^10 and 2^20 sequence boundaries', () => {
    const now = 1_700_000_000_000;
    const a = new IdGenerator('NODE01');
    const b = new IdGenerator('NODE01');
    seqOf(a).seq = seqOf(b).seq = 1_048_000;
    const expected = Array.from({ length: 3000 }, () => a.next(now));
    const first = b.reserve(now, 3000);
    const run = new Run(new EventMeta('t', now, undefined), undefined, 0, b.idPrefix, first, new Array(3000).fill({}), undefined, undefined);
    expect(first).toBe(1_048_000);
    expect(Array.from({ length: 3000 }, (_, i) => run.id(i))).toEqual(expected);
    expect(run.events().map((e) => e.id)).toEqual(expected);
    // The generator carries on after the run, in order.
    expect(b.next(now)).toBe(a.next(now));
  });

  it('keeps ids increasing between runs and single ids, also when the clock moves or goes back', () => {
    const g = new IdGenerator();
    const ids: string[] = [];
    const take = (now: number, n: number) => {
      const s = g.reserve(now, n);
      const run = new Run(new EventMeta('t', now, undefined), undefined, 0, g.idPrefix, s, new Array(n).fill(0), undefined, undefined);
      for (let i = 0; i < n; i++) ids.push(run.id(i));
    };
    ids.push(g.next(5000));
    take(5000, 1500);
    ids.push(g.next(6000));
    take(4000, 700); // clock set back: the run keeps the last time
    take(7000, 1);
    ids.push(g.next(7000));
    for (let i = 1; i < ids.length; i++) expect(ids[i]! > ids[i - 1]!).toBe(true);
    expect(new Set(ids).size).toBe(ids.length);
    expect(ids.every((id) => id.length === 26)).toBe(true);
  });
});

describe('Run', () => {
  it('shares type, time, key and options, and slices keep their ids', () => {
    const meta = new EventMeta('order', 1_700_000_000_000, { correlationId: 'c', headers: { a: 'b' } });
    const g = new IdGenerator();
    const run = new Run(meta, 'k', 2, g.idPrefix, g.reserve(meta.time, 5), [1, 2, 3, 4, 5], ['1', undefined, undefined, undefined, '5'], undefined);
    const evs = run.events();
    expect(evs.map((e) => [e.type, e.time, e.key, e.partition, e.correlationId, e.headers, e.data, e.json])).toEqual(
      [1, 2, 3, 4, 5].map((d) => ['order', meta.time, 'k', 2, 'c', { a: 'b' }, d, d === 1 || d === 5 ? String(d) : undefined]),
    );
    const part = run.slice(3, 5);
    expect([part.count, part.values, part.jsons]).toEqual([2, [4, 5], [undefined, '5']]);
    expect(part.events().map((e) => e.id)).toEqual(evs.slice(3).map((e) => e.id));
  });
});

const opts = (o: Partial<BatcherOptions> = {}): BatcherOptions => ({
  maxEvents: 100,
  maxUnitEvents: 100,
  maxBytes: 1 << 20,
  maxWaitMs: 0,
  maxInFlight: 8,
  maxPendingEvents: 10_000,
  onFull: 'wait',
  ...o,
});

function runOf(n: number, from = 0): Run {
  const g = new IdGenerator();
  return new Run(
    new EventMeta('t', 1_700_000_000_000, undefined),
    undefined,
    0,
    g.idPrefix,
    g.reserve(1_700_000_000_000, n),
    Array.from({ length: n }, (_, i) => from + i),
    undefined,
    undefined,
  );
}

const single = (i: number): OutgoingEvent => ({
  id: `s${i}`,
  type: 't',
  time: 0,
  key: undefined,
  data: i,
  json: undefined,
  partition: 0,
  correlationId: undefined,
  causationId: undefined,
  headers: undefined,
});

/** What a unit carries, in order: payloads of its run or its events. */
const carried = (u: PublishUnit): unknown[] => (u.run ? [...u.run.values] : u.events.map((e) => e.data));
const countOf = (u: PublishUnit): number => (u.run ? u.run.count : u.events.length);

describe('Batcher.addRun', () => {
  it('splits a run where a batch (maxEvents) or a unit (maxUnitEvents, maxBytes) ends, and keeps order with single events', async () => {
    const writes: (readonly PublishUnit[])[] = [];
    const b = new Batcher((units) => void writes.push(units), opts({ maxEvents: 10, maxUnitEvents: 4, maxBytes: 30 }));
    const lane = new Lane('t', 0);
    const tracked: [number, number][] = [];
    const settled: Promise<void>[] = [b.add(lane, single(-2), 1), b.add(lane, single(-1), 1)];
    b.addRun(lane, runOf(20), new Float64Array(20).fill(2), 0, (from, to, p) => {
      tracked.push([from, to]);
      settled.push(p);
    });
    settled.push(b.add(lane, single(100), 1));
    await Promise.all(settled);
    const units = writes.flat();
    expect(units.flatMap(carried)).toEqual([-2, -1, ...Array.from({ length: 20 }, (_, i) => i), 100]);
    for (const w of writes) expect(w.reduce((n, u) => n + countOf(u), 0)).toBeLessThanOrEqual(10);
    for (const u of units) {
      expect(countOf(u)).toBeLessThanOrEqual(4);
      expect(u.bytes).toBeLessThanOrEqual(30);
      if (u.run) expect(u.events).toHaveLength(0);
    }
    // The ranges tracked cover the run once, in order, and match the units' runs.
    expect(tracked.flat()).toEqual([0, ...tracked.slice(1).flatMap(([f]) => [f, f]), 20]);
    expect(tracked.map(([f, t]) => t - f)).toEqual(units.filter((u) => u.run).map(countOf));
    expect(b.stats.events).toBe(23);
  });

  it('makes the batches and units single events make, for any sizes', async () => {
    const sizes = [4, 4, 4, 4, 11, 1, 1, 9, 4, 4, 4, 2, 30, 3];
    for (const o of [opts({ maxEvents: 1000, maxBytes: 10 }), opts({ maxEvents: 3, maxBytes: 12 }), opts({ maxEvents: 5, maxUnitEvents: 2, maxBytes: 1000 })]) {
      const layout = async (queue: (b: Batcher, lane: Lane) => void) => {
        const writes: number[][] = [];
        const b = new Batcher((units) => void writes.push(units.map(countOf)), o);
        queue(b, new Lane('t', 0));
        await b.flushAll();
        return writes;
      };
      const perEvent = await layout((b, lane) => sizes.forEach((size, i) => void b.add(lane, single(i), size)));
      const asRun = await layout((b, lane) => b.addRun(lane, runOf(sizes.length), Float64Array.from(sizes), 0, () => {}));
      expect(asRun).toEqual(perEvent);
      expect(perEvent.length).toBeGreaterThan(2);
    }
  });

  it("settles a run's units with their own write's fate", async () => {
    let call = 0;
    const b = new Batcher((units): WriteResult => (call++ === 1 ? units.map(() => new Error('refused')) : undefined), opts({ maxEvents: 5 }));
    const fates: [number, number, string][] = [];
    const ps: Promise<void>[] = [];
    b.addRun(new Lane('t', 0), runOf(12), new Float64Array(12), 0, (from, to, p) =>
      ps.push(
        p.then(
          () => void fates.push([from, to, 'ok']),
          (e: unknown) => void fates.push([from, to, (e as Error).constructor.name]),
        ),
      ),
    );
    await Promise.all(ps);
    expect(fates).toEqual([
      [0, 5, 'ok'],
      [5, 10, TransportError.name],
      [10, 12, 'ok'],
    ]);
  });

  it('refuses a run once closed', async () => {
    const b = new Batcher(() => undefined, opts());
    await b.close();
    let p: Promise<void> | undefined;
    b.addRun(new Lane('t', 0), runOf(3), new Float64Array(3), 0, (from, to, q) => {
      expect([from, to]).toEqual([0, 3]);
      p = q;
    });
    await expect(p).rejects.toBeInstanceOf(ClosedError);
  });
});

describe('publishMany through a transport that reads runs', () => {
  const events = defineEvents({ t: z.object({ n: z.number().int() }) });

  /** A transport that records what it was given and refuses the units `refuse` picks. */
  function recording(refuse: (u: PublishUnit) => boolean = () => false) {
    const units: { partition: number; run: boolean; ids: string[]; data: unknown[]; key: string | undefined; correlationId: string | undefined }[] = [];
    const type = `runs-${Math.random().toString(36).slice(2)}`;
    registerTransport(type, (cfg) => {
      const partitions = Number(cfg['partitions'] ?? 1);
      const t: Transport = {
        type,
        capabilities: { encoding: 'none', maxInFlight: 4, maxEventBytes: 1 << 20, input: { kind: 'runs' } },
        connect: async () => {},
        partitionsFor: () => partitions,
        write: (us) =>
          us.map((u) => {
            const evs = u.run ? u.run.events() : u.events;
            units.push({ partition: u.partition, run: u.run !== undefined, ids: evs.map((e) => e.id), data: evs.map((e) => e.data), key: evs[0]!.key, correlationId: evs[0]!.correlationId });
            return refuse(u) ? new Error('refused') : undefined;
          }),
        subscribe: async () => ({ close: async () => {} }),
        close: async () => {},
      };
      return t;
    });
    return { type, units };
  }

  it('hands one-lane slices over as runs: ids increasing across calls and single publishes, payloads in order', async () => {
    const rec = recording();
    const bus = await createEventBus({ service: 's', events, transport: { type: rec.type }, batching: { maxEvents: 64 } });
    await bus.publish('t', { n: -1 });
    await bus.publishMany(
      't',
      Array.from({ length: 200 }, (_, n) => ({ n })),
      { correlationId: 'c' },
    );
    await bus.publish('t', { n: 200 });
    await bus.close();
    expect(rec.units.map((u) => u.run)).toEqual([false, true, true, true, true, false]);
    expect(rec.units.flatMap((u) => u.data)).toEqual(Array.from({ length: 202 }, (_, i) => ({ n: i - 1 })));
    const ids = rec.units.flatMap((u) => u.ids);
    for (let i = 1; i < ids.length; i++) expect(ids[i]! > ids[i - 1]!).toBe(true);
    expect(rec.units.filter((u) => u.run).every((u) => u.correlationId === 'c')).toBe(true);
  });

  it('a fixed key on several partitions is one run in its partition; a key function is not a run', async () => {
    const rec = recording();
    const bus = await createEventBus({ service: 's', events, transport: { type: rec.type, partitions: 4 } });
    const payloads = Array.from({ length: 10 }, (_, n) => ({ n }));
    await bus.publishMany('t', payloads, { key: 'customer-7' });
    const keyed = rec.units.splice(0);
    expect(keyed).toHaveLength(1);
    expect(keyed[0]).toMatchObject({ run: true, key: 'customer-7' });
    await bus.publishMany('t', payloads, { key: (p) => `k${p.n % 3}` });
    expect(rec.units.some((u) => u.run)).toBe(false);
    await bus.close();
  });

  it('round-robin by runs: each partition gets as many events as one by one, in contiguous parts, continuing where the last publish left off', async () => {
    const rec = recording();
    const bus = await createEventBus({ service: 's', events, transport: { type: rec.type, partitions: 4 }, batching: { maxEvents: 8 } });
    const counts = (units: typeof rec.units) => [0, 1, 2, 3].map((p) => units.filter((u) => u.partition === p).reduce((n, u) => n + u.data.length, 0));
    await bus.publish('t', { n: -1 }); // partition 0: the runs start at partition 1
    await bus.publishMany(
      't',
      Array.from({ length: 10 }, (_, n) => ({ n })),
    );
    const units = rec.units.splice(0);
    expect(counts(units)).toEqual([3, 3, 3, 2]); // as 11 events one by one from partition 0
    // Slices of 8: [1: 0,1] [2: 2,3] [3: 4,5] [0: 6,7], then [1: 8] [2: 9]
    expect(units.slice(1).map((u) => [u.partition, u.run, u.data.map((d) => (d as { n: number }).n)])).toEqual([
      [1, true, [0, 1]],
      [2, true, [2, 3]],
      [3, true, [4, 5]],
      [0, true, [6, 7]],
      [1, true, [8]],
      [2, true, [9]],
    ]);
    const ids = units.flatMap((u) => u.ids);
    for (let i = 1; i < ids.length; i++) expect(ids[i]! > ids[i - 1]!).toBe(true);
    await bus.publish('t', { n: 10 });
    expect(rec.units.splice(0).map((u) => u.partition)).toEqual([3]);
    await bus.close();
  });

  it('a refused run unit fails exactly its payloads (PublishPartialError)', async () => {
    let unit = 0;
    const rec = recording(() => unit++ === 1);
    const bus = await createEventBus({ service: 's', events, transport: { type: rec.type, partitions: 3 }, batching: { maxEvents: 4 } });
    const err = await bus
      .publishMany(
        't',
        Array.from({ length: 10 }, (_, n) => ({ n })),
        { key: 'k' },
      )
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(PublishPartialError);
    expect(err).toMatchObject({ failed: [4, 5, 6, 7], accepted: 6 });
    await bus.close();
  });
});
