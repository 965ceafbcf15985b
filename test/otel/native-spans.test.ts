/**
 * eventlane/otel on the native transport: a main-thread consumer's handler runs get process spans naming the
 * transport (`messaging.system` `native`); handlers in worker threads get none (the channels are per thread),
 * while their send spans and injected headers are there as usual.
 */
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { createEventBus, defineEvents, type EventEnvelope } from '../../src/index.js';
import { instrumentEventlane } from '../../src/otel/index.js';
import { waitFor } from '../helpers/wait.js';
import { finishedSpans, onlySpan, perTest } from './otel-harness.js';

const events = defineEvents({ tick: z.object({ seq: z.number().int() }) });
const COUNT_HANDLER = pathToFileURL(join(__dirname, '../native/fixtures/count-handler.mjs')).href;

const t = perTest<typeof events>();

describe('eventlane/otel spans (native transport)', () => {
  it('makes process spans for main-thread handlers, linked to the send span, with messaging.system native', async () => {
    t.otel = instrumentEventlane();
    t.bus = await createEventBus({ service: 'ticks', events, transport: { type: 'native', partitions: 2 }, logger: false });
    const seen: EventEnvelope[] = [];
    await t.bus.subscribe('tick', { group: 'main' }, (e) => void seen.push(e));
    await t.bus.publish('tick', { seq: 1 });
    await t.bus.idle();
    const send = await onlySpan('send tick');
    const process = await onlySpan('process tick');
    expect(send.attributes['messaging.system']).toBe('native');
    expect(process.attributes).toMatchObject({ 'messaging.system': 'native', 'messaging.consumer.group.name': 'main', 'messaging.message.id': seen[0]!.id, 'eventlane.outcome': 'ack' });
    expect(process.links.map((l) => l.context.spanId)).toEqual([send.spanContext().spanId]);
  });

  it('makes no process span for handlers in worker threads; the send span is there', async () => {
    t.otel = instrumentEventlane();
    t.bus = await createEventBus({ service: 'ticks', events, transport: { type: 'native', partitions: 2 }, logger: false });
    const counters = new Int32Array(new SharedArrayBuffer(12));
    await t.bus.subscribe('tick', { group: 'workers', workers: 1, handler: COUNT_HANDLER, workerData: { counters: counters.buffer } });
    await t.bus.publish('tick', { seq: 1 });
    await waitFor(() => Atomics.load(counters, 0) === 1, 10_000, 'the worker to handle the event');
    await t.bus.idle();
    expect((await finishedSpans()).map((s) => s.name)).toEqual(['send tick']);
  });
});
