/**
 * eventlane/otel's spans on the memory transport, with a real SDK: the send span and its headers, the process
 * span linked to it (or its child), the handler's own spans under the process span, failures, publishMany,
 * and a traceparent the caller set.
 */
import { SpanKind, SpanStatusCode } from '@opentelemetry/api';
import type { ReadableSpan } from '@opentelemetry/sdk-trace-base';
import { describe, expect, it } from 'vitest';
import { createEventBus, type EventBus, type EventEnvelope } from '../../src/index.js';
import { instrumentEventlane } from '../../src/otel/index.js';
import { events, finishedSpans, onlySpan, perTest, testTracer } from './otel-harness.js';

const t = perTest<typeof events>();

async function memoryBus(): Promise<EventBus<typeof events>> {
  t.bus = await createEventBus({ service: 'shop', events, transport: { type: 'memory', partitions: 2 }, logger: false });
  return t.bus;
}

const ids = (s: ReadableSpan) => ({ traceId: s.spanContext().traceId, spanId: s.spanContext().spanId });

describe('eventlane/otel spans (memory transport)', () => {
  it('makes a PRODUCER span per publish() with the messaging attributes, and injects its context into the headers', async () => {
    t.otel = instrumentEventlane();
    const b = await memoryBus();
    const seen: EventEnvelope[] = [];
    await b.subscribe('order.created', { group: 'billing' }, (e) => void seen.push(e));
    await b.publish('order.created', { orderId: 'o-1' }, { correlationId: 'conv-1' });
    await b.idle();
    const send = await onlySpan('send order.created');
    expect(send.kind).toBe(SpanKind.PRODUCER);
    expect(send.instrumentationScope.name).toBe('eventlane');
    expect(send.attributes).toEqual({
      'messaging.system': 'memory',
      'messaging.destination.name': 'order.created',
      'messaging.operation.type': 'send',
      'messaging.operation.name': 'send',
      'messaging.message.conversation_id': 'conv-1',
    });
    expect(send.status.code).toBe(SpanStatusCode.UNSET);
    const { traceId, spanId } = ids(send);
    expect(seen[0]!.headers?.['traceparent']).toBe(`00-${traceId}-${spanId}-01`);
  });

  it('links the CONSUMER process span to the send span by default, in a trace of its own, with the delivery attributes', async () => {
    t.otel = instrumentEventlane();
    const b = await memoryBus();
    const seen: EventEnvelope[] = [];
    await b.subscribe('order.created', { group: 'billing', consumer: 'billing-1' }, (e) => void seen.push(e));
    await b.publish('order.created', { orderId: 'o-1' }, { key: 'customer-7', correlationId: 'conv-1' });
    await b.idle();
    const send = await onlySpan('send order.created');
    const process = await onlySpan('process order.created');
    expect(process.kind).toBe(SpanKind.CONSUMER);
    expect(process.links.map((l) => ({ traceId: l.context.traceId, spanId: l.context.spanId }))).toEqual([ids(send)]);
    expect(process.parentSpanContext).toBeUndefined();
    expect(process.spanContext().traceId).not.toBe(send.spanContext().traceId);
    const partition = seen[0]!.key === 'customer-7' ? process.attributes['messaging.destination.partition.id'] : undefined;
    expect(process.attributes).toEqual({
      'messaging.system': 'memory',
      'messaging.destination.name': 'order.created',
      'messaging.operation.type': 'process',
      'messaging.operation.name': 'process',
      'messaging.consumer.group.name': 'billing',
      'messaging.client.id': 'billing-1',
      'messaging.destination.partition.id': partition,
      'messaging.message.id': seen[0]!.id,
      'messaging.message.conversation_id': 'conv-1',
      'eventlane.attempt': 1,
      'eventlane.outcome': 'ack',
    });
    expect(partition).toMatch(/^[01]$/);
  });

  it("makes the process span the send span's child with processSpanParent 'child'", async () => {
    t.otel = instrumentEventlane({ processSpanParent: 'child' });
    const b = await memoryBus();
    await b.subscribe('order.created', { group: 'billing' }, () => {});
    await b.publish('order.created', { orderId: 'o-1' });
    await b.idle();
    const send = await onlySpan('send order.created');
    const process = await onlySpan('process order.created');
    expect(process.spanContext().traceId).toBe(send.spanContext().traceId);
    expect(process.parentSpanContext?.spanId).toBe(send.spanContext().spanId);
    expect(process.links).toEqual([]);
  });

  it('runs the handler with the process span current: a span the handler starts, after an await too, is its child', async () => {
    t.otel = instrumentEventlane();
    const b = await memoryBus();
    await b.subscribe('order.created', { group: 'billing' }, async () => {
      testTracer.startSpan('before await').end();
      await new Promise((r) => setTimeout(r, 1));
      testTracer.startSpan('db query').end();
    });
    await b.publish('order.created', { orderId: 'o-1' });
    await b.idle();
    const process = await onlySpan('process order.created');
    for (const name of ['before await', 'db query']) {
      const child = await onlySpan(name);
      expect(child.parentSpanContext?.spanId, name).toBe(process.spanContext().spanId);
      expect(child.spanContext().traceId, name).toBe(process.spanContext().traceId);
    }
  });

  it('marks a failed run: error.type, status ERROR, the exception, and the retry then the dead letter as span events', async () => {
    t.otel = instrumentEventlane();
    const b = await memoryBus();
    const retry = { backoff: { initialMs: 1, maxMs: 1 } };
    await b.subscribe('order.created', { group: 'sync', maxDeliveries: 2, retry }, () => {
      throw new TypeError('no such order');
    });
    await b.subscribe('order.created', { group: 'async', maxDeliveries: 2, retry }, async () => {
      await Promise.resolve();
      throw new RangeError('amount out of range');
    });
    await b.publish('order.created', { orderId: 'o-1' });
    await b.idle();
    const runs = (await finishedSpans()).filter((s) => s.name === 'process order.created');
    expect(runs).toHaveLength(4);
    for (const [group, type, message] of [
      ['sync', 'TypeError', 'no such order'],
      ['async', 'RangeError', 'amount out of range'],
    ] as const) {
      const mine = runs.filter((s) => s.attributes['messaging.consumer.group.name'] === group).sort((a, b) => Number(a.attributes['eventlane.attempt']) - Number(b.attributes['eventlane.attempt']));
      expect(
        mine.map((s) => [s.attributes['eventlane.attempt'], s.attributes['error.type'], s.status.code, s.status.message, s.attributes['eventlane.outcome']]),
        group,
      ).toEqual([
        [1, type, SpanStatusCode.ERROR, message, 'retry'],
        [2, type, SpanStatusCode.ERROR, message, 'dead_letter'],
      ]);
      expect(mine[0]!.events.map((e) => e.name)).toEqual(['exception', 'eventlane.retry']);
      expect(mine[0]!.events[0]!.attributes?.['exception.type']).toBe(type);
      expect(mine[0]!.events[1]!.attributes).toEqual({ 'eventlane.retry.attempt': 2, 'eventlane.retry.delay_ms': 1 });
      expect(mine[1]!.events.map((e) => e.name)).toEqual(['exception', 'eventlane.dead_letter']);
      expect(mine[1]!.events[1]!.attributes?.['eventlane.dead_letter.reason']).toContain(message);
    }
  });

  it('marks a failed publish: error.type and status ERROR on the send span', async () => {
    t.otel = instrumentEventlane();
    const b = await memoryBus();
    const err = await b.publish('order.created', { orderId: 42 } as never).catch((e: unknown) => e);
    expect((err as Error).name).toBe('ValidationError');
    const send = await onlySpan('send order.created');
    expect(send.attributes['error.type']).toBe('ValidationError');
    expect(send.status.code).toBe(SpanStatusCode.ERROR);
    expect(send.events.map((e) => e.name)).toEqual(['exception']);
  });

  it('makes one send span per publishMany() call, with messaging.batch.message_count; each process span links to it', async () => {
    t.otel = instrumentEventlane();
    const b = await memoryBus();
    await b.subscribe('order.created', { group: 'billing' }, () => {});
    await b.publishMany('order.created', [{ orderId: 'o-1' }, { orderId: 'o-2' }, { orderId: 'o-3' }]);
    await b.idle();
    const send = await onlySpan('send order.created');
    expect(send.attributes['messaging.batch.message_count']).toBe(3);
    const processes = (await finishedSpans()).filter((s) => s.name === 'process order.created');
    expect(processes).toHaveLength(3);
    for (const p of processes) expect(p.links.map((l) => l.context.spanId)).toEqual([send.spanContext().spanId]);
  });

  it('keeps a traceparent the caller set, adds no tracestate of its own, and links the process span to it', async () => {
    t.otel = instrumentEventlane();
    const b = await memoryBus();
    const seen: EventEnvelope[] = [];
    await b.subscribe('order.created', { group: 'billing' }, (e) => void seen.push(e));
    const traceparent = '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01';
    await b.publish('order.created', { orderId: 'o-1' }, { headers: { traceparent, tenant: 't-1' } });
    await b.idle();
    expect(seen[0]!.headers).toEqual({ traceparent, tenant: 't-1' });
    const process = await onlySpan('process order.created');
    expect(process.links.map((l) => [l.context.traceId, l.context.spanId])).toEqual([['0af7651916cd43dd8448eb211c80319c', 'b7ad6b7169203331']]);
  });

  it('makes the send span a child of the span current at publish(), and calls the hooks', async () => {
    const hooked: string[] = [];
    t.otel = instrumentEventlane({
      publishHook: (span, info) => {
        span.setAttribute('app.count', info.count);
        hooked.push(`publish ${info.type}`);
      },
      processHook: (span, info) => {
        span.setAttribute('app.order', (info.event.data as { orderId: string }).orderId);
        throw new Error('a hook that throws changes nothing');
      },
    });
    const b = await memoryBus();
    await b.subscribe('order.created', { group: 'billing' }, () => {});
    await testTracer.startActiveSpan('checkout', async (checkout) => {
      await b.publish('order.created', { orderId: 'o-9' });
      checkout.end();
    });
    await b.idle();
    const send = await onlySpan('send order.created');
    expect(send.parentSpanContext?.spanId).toBe((await onlySpan('checkout')).spanContext().spanId);
    expect(send.attributes['app.count']).toBe(1);
    expect((await onlySpan('process order.created')).attributes['app.order']).toBe('o-9');
    expect(hooked).toEqual(['publish order.created']);
  });
});
