import { AsyncLocalStorage } from 'node:async_hooks';
import dc from 'node:diagnostics_channel';
import { afterEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { createEventBus, defineEvents, registerTransport } from '../../src/index.js';
import type { PublishUnit, Transport } from '../../src/transport.js';
import type { BatchMessage, OutcomeMessage, ProcessMessage, PublishErrorMessage, PublishMessage } from '../../src/diagnostics.js';
import { TransportError } from '../../src/errors.js';

const events = defineEvents({ tick: z.object({ n: z.number() }) });
const undo: (() => void)[] = [];

function on(name: string, fn: (msg: unknown) => void): void {
  dc.subscribe(name, fn);
  undo.push(() => dc.unsubscribe(name, fn));
}

function onTrace(name: string, handlers: Partial<Record<'start' | 'end' | 'asyncStart' | 'asyncEnd' | 'error', (msg: never) => void>>): void {
  const tc = dc.tracingChannel(name);
  const all = { start() {}, end() {}, asyncStart() {}, asyncEnd() {}, error() {}, ...handlers } as dc.TracingChannelSubscribers<object>;
  tc.subscribe(all);
  undo.push(() => tc.unsubscribe(all));
}

afterEach(() => {
  for (const f of undo.splice(0)) f();
});

describe('diagnostics_channel', () => {
  it('traces publish calls; headers a start subscriber sets reach the handler under the caller’s own', async () => {
    const seen: PublishMessage[] = [];
    onTrace('eventlane:publish', {
      start: (msg: PublishMessage) => {
        msg.headers = { traceparent: `tp-${seen.length}`, who: 'instrumentation' };
      },
      asyncEnd: (msg: PublishMessage) => void seen.push(msg),
    });
    const bus = await createEventBus({ service: 's', events, transport: { type: 'memory' }, logger: false });
    const headers: Record<string, string>[] = [];
    await bus.subscribe('tick', { group: 'g' }, (e) => void headers.push({ ...e.headers }));
    await bus.publish('tick', { n: 1 }, { headers: { who: 'caller' } });
    await bus.publishMany('tick', [{ n: 2 }, { n: 3 }]);
    await bus.idle();
    await bus.close();
    expect(seen.map((m) => [m.type, m.transport, m.count])).toEqual([
      ['tick', 'memory', 1],
      ['tick', 'memory', 2],
    ]);
    expect(headers).toEqual([
      { traceparent: 'tp-0', who: 'caller' },
      { traceparent: 'tp-1', who: 'instrumentation' },
      { traceparent: 'tp-1', who: 'instrumentation' },
    ]);
  });

  it('traces handler runs and reports ack, retry and dead-letter', async () => {
    const process: string[] = [];
    onTrace('eventlane:process', {
      start: (m: ProcessMessage) => void process.push(`start ${m.context.attempt}`),
      asyncEnd: (m: ProcessMessage) => void process.push(`asyncEnd ${m.context.attempt}${m.error ? ' error' : ''}`),
    });
    const outcomes: string[] = [];
    on('eventlane:ack', (m) => void outcomes.push(`ack ${(m as OutcomeMessage).event.data && ((m as OutcomeMessage).event.data as { n: number }).n}`));
    on('eventlane:retry', (m) => void outcomes.push(`retry -> ${(m as OutcomeMessage).nextAttempt}`));
    on('eventlane:dead-letter', (m) => void outcomes.push(`dead ${(m as OutcomeMessage).reason}`));
    const bus = await createEventBus({ service: 's', events, transport: { type: 'memory' }, logger: false });
    await bus.subscribe('tick', { group: 'g', maxDeliveries: 2, retry: { backoff: { initialMs: 1, maxMs: 1 } } }, async (e) => {
      if (e.data.n === 2) throw new Error('bad tick');
    });
    await bus.publish('tick', { n: 1 });
    await bus.publish('tick', { n: 2 });
    await bus.idle();
    await bus.close();
    expect(outcomes).toEqual(['ack 1', 'retry -> 2', 'dead Error: bad tick']);
    expect(process).toEqual(['start 1', 'asyncEnd 1', 'start 1', 'asyncEnd 1 error', 'start 2', 'asyncEnd 2 error']);
  });

  it('reports each unit of a write on eventlane:batch as it settles, with its events and the write time', async () => {
    const units: BatchMessage[] = [];
    on('eventlane:batch', (m) => void units.push(m as BatchMessage));
    const bus = await createEventBus({ service: 's', events, transport: { type: 'memory', partitions: 2 }, logger: false });
    await bus.publishMany('tick', [{ n: 1 }, { n: 2 }, { n: 3 }, { n: 4 }, { n: 5 }], { key: (d) => (d.n % 2 === 0 ? 'even' : 'odd') });
    expect(units).toHaveLength(2); // settled by the time the call resolves
    await bus.publish('tick', { n: 6 }, { key: 'even' });
    await bus.close();
    const byPartition = new Map<number, number[]>();
    for (const u of units) byPartition.set(u.partition, [...(byPartition.get(u.partition) ?? []), u.events]);
    expect(units.every((u) => u.type === 'tick' && u.written === u.events && u.error === undefined && u.writeMs >= 0)).toBe(true);
    expect(units.reduce((n, u) => n + u.events, 0)).toBe(6);
    expect([...byPartition.values()].map((counts) => counts.slice(0, 1)).sort()).toEqual([[2], [3]].sort());
    expect(units).toHaveLength(3);
  });

  it('reports a failed unit once, with its error and the events written before it failed', async () => {
    let writes = 0;
    const failing: Transport = {
      type: 'failing-probe',
      capabilities: { encoding: 'none', maxInFlight: 1, maxEventBytes: 1 << 20 },
      connect: async () => {},
      partitionsFor: () => 1,
      write: (_units, settle) => {
        writes++;
        if (writes === 1) {
          settle.failed(0, new Error('disk full'), 1); // the first event written, then the unit failed
          return [new Error('reported twice')]; // ignored: the unit settled already
        }
        if (writes === 2) throw new Error('write threw');
        return Promise.reject(new TransportError('connection reset'));
      },
      subscribe: () => Promise.reject(new Error('publish only')),
      close: async () => {},
    };
    registerTransport('failing-probe', () => failing);
    const units: BatchMessage[] = [];
    on('eventlane:batch', (m) => void units.push(m as BatchMessage));
    const bus = await createEventBus({ service: 's', events, transport: { type: 'failing-probe' }, logger: false });
    await expect(bus.publishMany('tick', [{ n: 1 }, { n: 2 }, { n: 3 }])).rejects.toThrow();
    await expect(bus.publish('tick', { n: 4 })).rejects.toThrow(/write threw/);
    await expect(bus.publish('tick', { n: 5 })).rejects.toThrow(/connection reset/);
    await bus.close();
    expect(units.map((u) => [u.events, u.written, (u.error as { code?: string }).code, u.error?.message])).toEqual([
      [3, 1, 'ERR_TRANSPORT', 'Transport write failed: disk full'],
      [1, 0, 'ERR_TRANSPORT', 'Transport write failed: write threw'],
      [1, 0, 'ERR_TRANSPORT', 'connection reset'],
    ]);
  });

  it('reports publishes refused before the batcher on eventlane:publish-error, and nothing for those that go through', async () => {
    const refused: PublishErrorMessage[] = [];
    on('eventlane:publish-error', (m) => void refused.push(m as PublishErrorMessage));
    const bus = await createEventBus({ service: 's', events, transport: { type: 'memory' }, logger: false });
    await bus.publish('tick', { n: 1 });
    await bus.publishMany('tick', [{ n: 2 }]);
    expect(bus.tryPublish('tick', { n: 3 })).toBe(true);
    await expect(bus.publish('tick', { n: 'x' as unknown as number })).rejects.toThrow();
    await expect(bus.publishMany('tick', [{ n: 4 }, { n: 'y' as unknown as number }])).rejects.toThrow();
    expect(() => bus.tryPublish('tick', { n: 'z' as unknown as number })).toThrow();
    await expect(bus.publish('tock' as 'tick', { n: 5 })).rejects.toThrow();
    await bus.close();
    await expect(bus.publish('tick', { n: 6 })).rejects.toThrow();
    expect(refused.map((m) => [m.type, m.count, (m.error as { code?: string }).code])).toEqual([
      ['tick', 1, 'ERR_VALIDATION'],
      ['tick', 2, 'ERR_VALIDATION'],
      ['tick', 1, 'ERR_VALIDATION'],
      ['tock', 1, 'ERR_UNKNOWN_EVENT'],
      ['tick', 1, 'ERR_CLOSED'],
    ]);
  });

  it('runs the publish call and the handler inside the `within` a start subscriber sets; the process message names the transport', async () => {
    const als = new AsyncLocalStorage<string>();
    const options: unknown[] = [];
    onTrace('eventlane:publish', {
      start: (m: PublishMessage) => {
        options.push(m.options);
        m.within = (run) => als.run(`send ${m.type}`, run);
      },
    });
    const transports: (string | undefined)[] = [];
    onTrace('eventlane:process', {
      start: (m: ProcessMessage) => {
        transports.push(m.transport);
        m.within = (run) => als.run(`process ${m.event.id}`, run);
      },
    });
    const bus = await createEventBus({ service: 's', events, transport: { type: 'memory' }, logger: false });
    const inside: string[] = [];
    const ids: string[] = [];
    await bus.subscribe('tick', { group: 'g' }, async (e) => {
      ids.push(e.id);
      await Promise.resolve();
      inside.push(als.getStore() ?? 'none');
    });
    const opts = { correlationId: 'c-1' };
    await bus.publish('tick', { n: 1 }, opts);
    await bus.idle();
    await bus.close();
    expect(options).toEqual([opts]);
    expect(options[0]).toBe(opts);
    expect(transports).toEqual(['memory']);
    expect(inside).toEqual([`process ${ids[0]}`]);
  });

  it('runs the handler without a within when the start subscriber sets none', async () => {
    onTrace('eventlane:process', { start: () => {} });
    const bus = await createEventBus({ service: 's', events, transport: { type: 'memory' }, logger: false });
    const got: number[] = [];
    await bus.subscribe('tick', { group: 'g' }, (e) => void got.push(e.data.n));
    await bus.publish('tick', { n: 7 });
    await bus.idle();
    await bus.close();
    expect(got).toEqual([7]);
  });

  it('writes the batch a publish opens inside the `within` its start subscriber set', async () => {
    const als = new AsyncLocalStorage<string>();
    const writes: (string | undefined)[] = [];
    const probe: Transport = {
      type: 'within-probe',
      capabilities: { encoding: 'none', maxInFlight: 1, maxEventBytes: 1 << 20 },
      connect: async () => {},
      partitionsFor: () => 1,
      write: (units: readonly PublishUnit[]) => void writes.push(`${als.getStore()} ${units[0]!.events.length}`),
      subscribe: () => Promise.reject(new Error('publish only')),
      close: async () => {},
    };
    registerTransport('within-probe', () => probe);
    onTrace('eventlane:publish', { start: (m: PublishMessage) => void (m.within = (run) => als.run(`send ${m.count}`, run)) });
    const bus = await createEventBus({ service: 's', events, transport: { type: 'within-probe' }, logger: false });
    await bus.publishMany('tick', [{ n: 1 }, { n: 2 }]);
    await bus.close();
    expect(writes).toEqual(['send 2 2']);
  });
});
