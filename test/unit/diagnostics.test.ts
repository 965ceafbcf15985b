import dc from 'node:diagnostics_channel';
import { afterEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { createEventBus, defineEvents } from '../../src/index.js';
import type { BatchMessage, OutcomeMessage, ProcessMessage, PublishMessage } from '../../src/diagnostics.js';

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

  it('reports each unit the batcher hands the transport on eventlane:batch, with its event count', async () => {
    const units: BatchMessage[] = [];
    on('eventlane:batch', (m) => void units.push(m as BatchMessage));
    const bus = await createEventBus({ service: 's', events, transport: { type: 'memory', partitions: 2 }, logger: false });
    await bus.publishMany('tick', [{ n: 1 }, { n: 2 }, { n: 3 }, { n: 4 }, { n: 5 }], { key: (d) => (d.n % 2 === 0 ? 'even' : 'odd') });
    await bus.publish('tick', { n: 6 }, { key: 'even' });
    await bus.close();
    const byPartition = new Map<number, number[]>();
    for (const u of units) byPartition.set(u.partition, [...(byPartition.get(u.partition) ?? []), u.events]);
    expect(units.every((u) => u.type === 'tick')).toBe(true);
    expect(units.reduce((n, u) => n + u.events, 0)).toBe(6);
    expect([...byPartition.values()].map((counts) => counts.slice(0, 1)).sort()).toEqual([[2], [3]].sort());
    expect(units).toHaveLength(3);
  });
});
