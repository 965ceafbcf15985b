import { describe, expect, it } from 'vitest';
import { Batcher, Lane, type BatcherOptions } from '../../src/batcher.js';
import { BackpressureError, ClosedError, TransportError } from '../../src/errors.js';
import type { OutgoingEvent, PublishUnit, WriteResult, WriteSettlement } from '../../src/transport.js';
import { consumerWaitProbe } from '../../transports/native/wait-probe.js';

const opts = (o: Partial<BatcherOptions> = {}): BatcherOptions => ({
  maxEvents: 100,
  maxUnitEvents: 100,
  maxBytes: 1 << 20,
  maxWaitMs: 0,
  maxInFlight: 1,
  maxPendingEvents: 10_000,
  onFull: 'wait',
  ...o,
});

function ev(i: number, partition = 0): OutgoingEvent {
  return { id: String(i), type: 't', time: 0, key: undefined, data: i, json: undefined, partition, correlationId: undefined, causationId: undefined, headers: undefined };
}

/** A writer whose writes complete only when the test says so. */
function manualWriter() {
  const calls: { units: readonly PublishUnit[]; done: (r?: WriteResult | Error) => void }[] = [];
  const write = (units: readonly PublishUnit[]) =>
    new Promise<WriteResult>((resolve, reject) => {
      calls.push({ units, done: (r) => (r instanceof Error ? reject(r) : resolve(r)) });
    });
  return { calls, write };
}

const tick = () => new Promise((r) => setImmediate(r));

describe('Batcher', () => {
  it('sends at once, within add(), once for each wait of a consumer thread; otherwise on the next microtask', async () => {
    const w = manualWriter();
    const b = new Batcher(w.write, opts({ maxInFlight: 4 }));
    const waiting = new Int32Array(4); // 2 partitions: [waiting 0, waiting 1, waits 0, waits 1]
    const lane = new Lane('t', 1, consumerWaitProbe(waiting));
    b.add(lane, ev(1, 1), 0);
    expect(w.calls).toHaveLength(0); // nobody waits: the batch stays open for this tick
    waiting[3] = 1;
    waiting[1] = 1;
    b.add(lane, ev(2, 1), 0);
    expect(w.calls).toHaveLength(1); // a consumer waits on partition 1: events 1 and 2 leave now
    expect(w.calls[0]!.units[0]!.events.map((e) => e.id)).toEqual(['1', '2']);
    b.add(lane, ev(3, 1), 0);
    expect(w.calls).toHaveLength(1); // the same wait: the consumer is being woken, event 3 waits with the batch
    waiting[3] = 2; // it took what was sent and waits again
    b.add(lane, ev(4, 1), 0);
    expect(w.calls).toHaveLength(2);
    expect(w.calls[1]!.units[0]!.events.map((e) => e.id)).toEqual(['3', '4']);
    waiting[1] = 0;
    waiting[0] = 1; // another partition's waiter does not matter
    waiting[2] = 5;
    b.add(lane, ev(5, 1), 0);
    expect(w.calls).toHaveLength(2);
    waiting[1] = 1;
    waiting[3] = 3;
    b.addFitted(lane, ev(6, 1), 0); // bulk calls keep their batches
    expect(w.calls).toHaveLength(2);
    await tick();
    expect(w.calls).toHaveLength(3);
    for (const c of w.calls) c.done();
    // A fixed flush interval (maxWaitMs > 0) is kept even when a consumer waits.
    const w2 = manualWriter();
    const lingering = new Batcher(w2.write, opts({ maxWaitMs: 5 }));
    lingering.add(new Lane('t', 0, consumerWaitProbe(new Int32Array([1, 1]))), ev(7), 0);
    expect(w2.calls).toHaveLength(0);
    await new Promise((r) => setTimeout(r, 20));
    expect(w2.calls).toHaveLength(1);
    w2.calls[0]!.done();
  });

  it('sends a lone event at once and coalesces events of the same tick', async () => {
    const w = manualWriter();
    const b = new Batcher(w.write, opts());
    const lane = new Lane('t', 0);
    const p1 = b.add(lane, ev(1), 0);
    await tick();
    expect(w.calls).toHaveLength(1);
    expect(w.calls[0]!.units[0]!.events).toHaveLength(1);
    w.calls[0]!.done();
    await p1;
    const ps = [2, 3, 4].map((i) => b.add(lane, ev(i), 0));
    await tick();
    expect(w.calls).toHaveLength(2);
    expect(w.calls[1]!.units[0]!.events.map((e) => e.data)).toEqual([2, 3, 4]);
    w.calls[1]!.done();
    await Promise.all(ps);
  });

  it('accumulates while a write is in flight and sends the rest together when it returns', async () => {
    const w = manualWriter();
    const b = new Batcher(w.write, opts());
    const lane = new Lane('t', 0);
    const first = b.add(lane, ev(0), 0);
    await tick();
    const rest = Array.from({ length: 10 }, (_, i) => b.add(lane, ev(i + 1), 0));
    await tick();
    expect(w.calls).toHaveLength(1); // still waiting for the first write
    w.calls[0]!.done();
    await first;
    await tick();
    expect(w.calls).toHaveLength(2);
    expect(w.calls[1]!.units[0]!.events).toHaveLength(10);
    w.calls[1]!.done();
    await Promise.all(rest);
  });

  it('bounds a batch by maxEvents and a unit by maxBytes', async () => {
    const w = manualWriter();
    const b = new Batcher(w.write, opts({ maxEvents: 4, maxBytes: 10, maxInFlight: 8 }));
    const lane = new Lane('t', 0);
    const ps = Array.from({ length: 10 }, (_, i) => b.add(lane, ev(i), 3));
    await tick();
    const sizes = w.calls.flatMap((c) => c.units.map((u) => u.events.length));
    expect(sizes.reduce((a, n) => a + n, 0)).toBe(10);
    expect(Math.max(...sizes)).toBeLessThanOrEqual(4);
    for (const c of w.calls) for (const u of c.units) expect(u.bytes).toBeLessThanOrEqual(10);
    w.calls.forEach((c) => c.done());
    await Promise.all(ps);
  });

  it('makes units of at most maxUnitEvents (a transport that stores events one by one), in one batch', async () => {
    const w = manualWriter();
    const b = new Batcher(w.write, opts({ maxUnitEvents: 1 }));
    const lane = new Lane('t', 0);
    const ps = Array.from({ length: 3 }, (_, i) => b.add(lane, ev(i), 0));
    await tick();
    expect(w.calls).toHaveLength(1);
    expect(w.calls[0]!.units.map((u) => u.events.length)).toEqual([1, 1, 1]);
    // Each publish settles with its own event's fate.
    w.calls[0]!.done([undefined, new Error('refused'), undefined]);
    expect(
      await Promise.all(
        ps.map((p) =>
          p.then(
            () => 'ok',
            (e: unknown) => (e as Error).constructor.name,
          ),
        ),
      ),
    ).toEqual(['ok', 'TransportError', 'ok']);
  });

  it('settles each event with the fate of its own unit', async () => {
    const w = manualWriter();
    const b = new Batcher(w.write, opts());
    const a = new Lane('t', 0);
    const c = new Lane('t', 1);
    const pa = b.add(a, ev(1, 0), 0);
    const pc = b.add(c, ev(2, 1), 0);
    await tick();
    expect(w.calls[0]!.units).toHaveLength(2);
    w.calls[0]!.done([undefined, new Error('boom')]);
    await expect(pa).resolves.toBeUndefined();
    await expect(pc).rejects.toBeInstanceOf(TransportError);
    expect(b.stats.failedEvents).toBe(1);
  });

  it('rejects every event of a failed write with a TransportError keeping the cause', async () => {
    const cause = new Error('socket closed');
    const b = new Batcher(() => Promise.reject(cause), opts());
    const p = b.add(new Lane('t', 0), ev(1), 0);
    await expect(p).rejects.toMatchObject({ code: 'ERR_TRANSPORT', cause });
  });

  it("applies backpressure: 'reject' throws BackpressureError past maxPendingEvents", async () => {
    const w = manualWriter();
    const b = new Batcher(w.write, opts({ maxPendingEvents: 3, onFull: 'reject' }));
    const lane = new Lane('t', 0);
    const ok = [1, 2, 3].map((i) => b.add(lane, ev(i), 0));
    await expect(b.add(lane, ev(4), 0)).rejects.toBeInstanceOf(BackpressureError);
    await tick();
    w.calls[0]!.done();
    await Promise.all(ok);
  });

  it("applies backpressure: 'wait' holds publishers until there is room, in order", async () => {
    const w = manualWriter();
    const b = new Batcher(w.write, opts({ maxPendingEvents: 2, onFull: 'wait' }));
    const lane = new Lane('t', 0);
    const ps = [1, 2, 3, 4, 5].map((i) => b.add(lane, ev(i), 0));
    expect(b.pendingEvents).toBe(2);
    const order: number[] = [];
    for (let round = 0; round < 5 && order.length < 5; round++) {
      await tick();
      for (const c of w.calls.splice(0)) {
        for (const u of c.units) order.push(...u.events.map((e) => e.data as number));
        c.done();
      }
    }
    await Promise.all(ps);
    expect(order).toEqual([1, 2, 3, 4, 5]);
  });

  it('lingers up to maxWaitMs to fill a batch when asked to', async () => {
    const w = manualWriter();
    const b = new Batcher(w.write, opts({ maxWaitMs: 30 }));
    const lane = new Lane('t', 0);
    const p = b.add(lane, ev(1), 0);
    await tick();
    expect(w.calls).toHaveLength(0);
    await new Promise((r) => setTimeout(r, 60));
    expect(w.calls).toHaveLength(1);
    w.calls[0]!.done();
    await p;
  });

  it('close() sends what is buffered, then refuses new events', async () => {
    const sent: number[] = [];
    const b = new Batcher(
      async (units) => {
        for (const u of units) sent.push(...u.events.map((e) => e.data as number));
      },
      opts({ maxWaitMs: 10_000 }),
    );
    const lane = new Lane('t', 0);
    const ps = [1, 2, 3].map((i) => b.add(lane, ev(i), 0));
    await b.close();
    await Promise.all(ps);
    expect(sent).toEqual([1, 2, 3]);
    await expect(b.add(lane, ev(4), 0)).rejects.toBeInstanceOf(ClosedError);
  });

  it('frees a write slot at once when the write completes synchronously, so a synchronous loop keeps sending', async () => {
    const written: number[][] = [];
    const failed = new Error('ring full');
    // In-process transports return the result itself; the third write fails its unit.
    const write = (units: readonly PublishUnit[]): WriteResult => {
      written.push(units[0]!.events.map((e) => e.data as number));
      return written.length === 3 ? [failed] : undefined;
    };
    const b = new Batcher(write, opts({ maxEvents: 4, maxInFlight: 1 }));
    const lane = new Lane('t', 0);
    const ps: Promise<void>[] = [];
    for (let i = 0; i < 18; i++) {
      ps.push(b.add(lane, ev(i), 0));
      // Each full batch left during the loop, although only one write may be in flight.
      expect(written).toHaveLength(Math.floor((i + 1) / 4));
    }
    expect(b.pendingEvents).toBe(2);
    const results = await Promise.allSettled(ps);
    expect(written.flat()).toEqual(Array.from({ length: 18 }, (_, i) => i));
    expect(results.filter((r) => r.status === 'rejected').length).toBe(4); // events 8..11
    expect((results[8] as PromiseRejectedResult).reason).toBeInstanceOf(TransportError);
    expect(b.pendingEvents).toBe(0);
  });

  it('keeps a lingering batch scheduled when synchronous writes settle around it', async () => {
    const written: number[][] = [];
    const b = new Batcher((units) => void written.push(units[0]!.events.map((e) => e.data as number)), opts({ maxEvents: 3, maxWaitMs: 20, maxInFlight: 1 }));
    const lane = new Lane('t', 0);
    const ps = [1, 2, 3, 4].map((i) => b.add(lane, ev(i), 0));
    expect(written).toEqual([[1, 2, 3]]); // full: left at once
    await tick();
    expect(written).toHaveLength(1); // event 4 lingers for company
    await Promise.all(ps); // and leaves when maxWaitMs is up
    expect(written).toEqual([[1, 2, 3], [4]]);
  });
});

describe('Batcher: a write the transport reports stalled', () => {
  it('lets the next batch out while it is still out, counts its events as pending until it settles, and frees its slot once', async () => {
    const calls: { settle: WriteSettlement; done: () => void }[] = [];
    const write = (_units: readonly PublishUnit[], settle: WriteSettlement) => new Promise<WriteResult>((resolve) => calls.push({ settle, done: () => resolve(undefined) }));
    const b = new Batcher(write, opts({ maxInFlight: 1 }));
    const lane = new Lane('t', 0);
    const first = b.add(lane, ev(1), 0);
    await tick();
    const second = b.add(lane, ev(2), 0);
    await tick();
    expect(calls).toHaveLength(1); // the one slot is busy
    calls[0]!.settle.stalled();
    calls[0]!.settle.stalled(); // twice: counted once
    await tick();
    expect(calls).toHaveLength(2); // the second batch went out while the first is still out
    expect(b.pendingEvents).toBe(2);
    expect(b.stats.slotsFreed).toBe(1);
    calls[0]!.done();
    await first;
    expect(b.pendingEvents).toBe(1);
    // The first write settling freed nothing more: the second still holds the only slot.
    const third = b.add(lane, ev(3), 0);
    await tick();
    expect(calls).toHaveLength(2);
    calls[1]!.done();
    await second;
    await tick();
    expect(calls).toHaveLength(3);
    calls[2]!.done();
    await third;
    expect(b.pendingEvents).toBe(0);
  });
});

describe('Batcher: a unit the transport reports written before its write settles', () => {
  it('settles that unit at once, counts it out of pending, and ignores the write result for it', async () => {
    const calls: { settle: WriteSettlement; done: (r: WriteResult) => void }[] = [];
    const write = (_units: readonly PublishUnit[], settle: WriteSettlement) => new Promise<WriteResult>((resolve) => calls.push({ settle, done: resolve }));
    const b = new Batcher(write, opts({ maxInFlight: 1, maxPendingEvents: 3 }));
    const lanes = [new Lane('t', 0), new Lane('t', 1)];
    const fates: string[] = [];
    const track = (p: Promise<void>, name: string) =>
      p.then(
        () => fates.push(`${name} ok`),
        (e: Error) => fates.push(`${name} ${e.message}`),
      );
    const a = track(b.add(lanes[0]!, ev(1, 0), 0), 'a');
    const c = track(b.add(lanes[1]!, ev(2, 1), 0), 'c');
    const c2 = track(b.add(lanes[1]!, ev(3, 1), 0), 'c2');
    await tick();
    expect(calls).toHaveLength(1); // one batch: unit 0 (a), unit 1 (c, c2)
    // Full (maxPendingEvents 3): a fourth publisher waits for room.
    const d = b.add(lanes[0]!, ev(4, 0), 0);
    calls[0]!.settle.written(1);
    calls[0]!.settle.written(1); // twice: counted once
    calls[0]!.settle.failed(1, new TransportError('too late')); // settled already: nothing
    calls[0]!.settle.written(7); // no such unit: nothing
    await c;
    await c2;
    expect(fates).toEqual(['c ok', 'c2 ok']);
    expect(b.pendingEvents).toBe(2); // a, and d let in by the room unit 1 gave back
    expect(b.stats.events).toBe(2);
    // The write fails as a whole: unit 1 stays written, unit 0 fails.
    calls[0]!.done([new TransportError('slow master'), new TransportError('not this one')]);
    await a;
    expect(fates).toEqual(['c ok', 'c2 ok', 'a slow master']);
    expect(b.stats.failedEvents).toBe(1);
    expect(b.stats.events).toBe(3);
    calls[0]!.settle.written(0); // after the write settled: nothing
    calls[0]!.settle.stalled(); // nor this
    await tick();
    expect(calls).toHaveLength(2);
    calls[1]!.done(undefined);
    await d;
    expect(b.pendingEvents).toBe(0);
    expect(b.stats).toMatchObject({ events: 4, failedEvents: 1, slotsFreed: 0 });
  });
});
