import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { ConfigError, createEventBus, defineEvents, PayloadTooLargeError, SerializationError, ValidationError } from '../../src/index.js';
import { events } from './bus-harness.js';

describe('publishing bad input', () => {
  it('rejects a payload that cannot be serialized, sends nothing, and keeps working', async () => {
    const bus = await createEventBus({ service: 's', events, transport: { type: 'memory' } });
    const seen: unknown[] = [];
    await bus.subscribe('blob.stored', { group: 'g' }, (e) => void seen.push(e.data));
    const cyclic: Record<string, unknown> = {};
    cyclic.self = cyclic;
    await expect(bus.publish('blob.stored', { name: 'a', meta: cyclic })).rejects.toBeInstanceOf(SerializationError);
    await expect(bus.publish('blob.stored', { name: 'b', meta: 10n })).rejects.toMatchObject({ code: 'ERR_SERIALIZATION' });
    await bus.publish('blob.stored', { name: 'c', meta: { fine: true } });
    await bus.close();
    expect(seen).toEqual([{ name: 'c', meta: { fine: true } }]);
  });

  it('rejects an event larger than the transport accepts', async () => {
    const bus = await createEventBus({ service: 's', events, transport: { type: 'memory', maxEventBytes: 1000 } });
    await expect(bus.publish('blob.stored', { name: 'x', meta: 'y'.repeat(2000) })).rejects.toBeInstanceOf(PayloadTooLargeError);
    await bus.close();
  });

  it('rejects an oversized payload of a JSON-safe schema at publish, even when the transport encodes later', async () => {
    const small = defineEvents({ note: z.object({ text: z.string() }) });
    const bus = await createEventBus({ service: 's', events: small, transport: { type: 'memory', maxEventBytes: 1000 } });
    const seen: string[] = [];
    await bus.subscribe('note', { group: 'g' }, (e) => void seen.push(e.data.text));
    await expect(bus.publish('note', { text: 'y'.repeat(1200) })).rejects.toBeInstanceOf(PayloadTooLargeError);
    // The bound says "maybe too big" (6 bytes per char), the exact size is under the limit: accepted.
    await bus.publish('note', { text: 'z'.repeat(900) });
    await bus.close();
    expect(seen).toEqual(['z'.repeat(900)]);
  });

  it('copies the headers at publish: a caller reusing one headers object changes no event already published', async () => {
    const small = defineEvents({ note: z.object({ text: z.string() }) });
    const bus = await createEventBus({ service: 's', events: small, transport: { type: 'memory' } });
    const seen: (string | undefined)[] = [];
    await bus.subscribe('note', { group: 'g', startFrom: '0' }, (e) => void seen.push(e.headers?.['trace']));
    const headers: Record<string, string> = {};
    const sent: Promise<void>[] = [];
    for (const t of ['t1', 't2', 't3']) {
      headers['trace'] = t;
      sent.push(bus.publish('note', { text: t }, { headers }));
    }
    headers['trace'] = 'later';
    await bus.publishMany('note', [{ text: 'm' }], { headers });
    headers['trace'] = 'after';
    await Promise.all(sent);
    await bus.idle();
    // Each event keeps the headers as they were at its publish: no object is shared with the caller's.
    expect(seen).toEqual(['t1', 't2', 't3', 'later']);
    const replay: (string | undefined)[] = [];
    await bus.subscribe('note', { group: 'late', startFrom: '0' }, (e) => void replay.push(e.headers?.['trace']));
    await bus.idle();
    expect(replay).toEqual(['t1', 't2', 't3', 'later']);
    await bus.close();
  });

  it('counts the publish options (key, ids, headers) toward maxEventBytes with the payload, in publish, tryPublish and publishMany', async () => {
    const small = defineEvents({ note: z.object({ text: z.string() }) });
    const bus = await createEventBus({ service: 's', events: small, transport: { type: 'memory', maxEventBytes: 1000 } });
    const seen: string[] = [];
    await bus.subscribe('note', { group: 'g' }, (e) => void seen.push(e.data.text));
    const big = { headers: { h: 'y'.repeat(5000) } };
    const err = await bus.publish('note', { text: 'x' }, big).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(PayloadTooLargeError);
    expect((err as Error).message).toMatch(/5013 bytes \(12 of payload, 5001 of publish options/);
    expect(() => bus.tryPublish('note', { text: 'x' }, big)).toThrow(PayloadTooLargeError);
    await expect(bus.publishMany('note', [{ text: 'x' }], big)).rejects.toBeInstanceOf(PayloadTooLargeError);
    // Each within the limit alone, not together (UTF-8 bytes: 'é' is two).
    const payload = { text: 'z'.repeat(900) };
    await expect(bus.publish('note', payload, { correlationId: 'é'.repeat(60) })).rejects.toBeInstanceOf(PayloadTooLargeError);
    await expect(bus.publish('note', payload, { key: 'k'.repeat(100) })).rejects.toBeInstanceOf(PayloadTooLargeError);
    await bus.publish('note', payload, { key: 'k'.repeat(50) });
    await bus.publish('note', payload);
    await bus.close();
    expect(seen).toEqual([payload.text, payload.text]);
  });

  it('reports every zod issue with its path', async () => {
    const bus = await createEventBus({ service: 's', events, transport: { type: 'noop' } });
    const err = await bus.publish('user.signed-up', { userId: 1, email: 'nope' } as never).catch((e) => e);
    expect(err).toBeInstanceOf(ValidationError);
    expect(err.issues.map((i: { path: string[] }) => i.path[0]).sort()).toEqual(['email', 'userId']);
    await bus.close();
  });
});

describe('tryPublish', () => {
  it('writes at once on an in-process transport, keeps order with what publish() buffered, and throws typed errors', async () => {
    const bus = await createEventBus({ service: 's', events, transport: { type: 'memory' } });
    const seen: string[] = [];
    await bus.subscribe('user.signed-up', { group: 'g' }, (e) => void seen.push(e.data.userId));
    const buffered = bus.publish('user.signed-up', { userId: 'u1', email: 'a@b.co' }); // in the open batch
    expect(bus.tryPublish('user.signed-up', { userId: 'u2', email: 'a@b.co' })).toBe(true);
    await buffered;
    expect(() => bus.tryPublish('user.signed-up', { userId: 'u3', email: 'nope' })).toThrow(ValidationError);
    expect(() => bus.tryPublish('nope' as never, {} as never)).toThrow(/nope/);
    await new Promise((r) => setTimeout(r, 20));
    expect(seen).toEqual(['u1', 'u2']);
    expect(bus.stats().events).toBe(2);
    await bus.close();
    expect(() => bus.tryPublish('user.signed-up', { userId: 'u4', email: 'a@b.co' })).toThrow(/closed/i);
  });

  it('memory always has room: true behind a burst of publish() calls several batches long', async () => {
    const bus = await createEventBus({ service: 's', events, transport: { type: 'memory' }, batching: { maxEvents: 100 } });
    const seen: string[] = [];
    await bus.subscribe('user.signed-up', { group: 'g' }, (e) => void seen.push(e.data.userId));
    const burst = Array.from({ length: 1000 }, (_, i) => bus.publish('user.signed-up', { userId: `u${i}`, email: 'a@b.co' }));
    // The memory transport writes synchronously, so every batch of the burst is taken at once and room remains.
    expect(bus.tryPublish('user.signed-up', { userId: 'last', email: 'a@b.co' })).toBe(true);
    await Promise.all(burst);
    await bus.idle();
    expect(seen.length).toBe(1001);
    expect(seen.at(-1)).toBe('last');
    await bus.close();
  });

  it('throws ConfigError on a transport without a synchronous write', async () => {
    const bus = await createEventBus({ service: 's', events, transport: { type: 'noop' } });
    expect(() => bus.tryPublish('user.signed-up', { userId: 'u1', email: 'a@b.co' })).toThrow(ConfigError);
    await bus.close();
  });
});

describe('payload validation on the publish and consume paths', () => {
  const orders = defineEvents({
    'order.placed': z.object({ id: z.number().int(), sku: z.string(), note: z.string().optional() }),
  });

  it('hands handlers the parsed output: a new object, unknown keys stripped; bad payloads name the field', async () => {
    const bus = await createEventBus({ service: 's', events: orders, transport: { type: 'memory', name: `validation-${Date.now()}` } });
    const got: unknown[] = [];
    await bus.subscribe('order.placed', { group: 'g' }, (e) => void got.push(e.data));
    const payload = { id: 1, sku: 'A', extra: true } as { id: number; sku: string };
    await bus.publish('order.placed', payload);
    payload.sku = 'changed after publish';
    await bus.publishMany('order.placed', [{ id: 2, sku: 'B', note: 'n' }]);
    const err = await bus.publish('order.placed', { id: 1.5, sku: 'C' }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ValidationError);
    expect((err as ValidationError).issues[0]!.path).toEqual(['id']);
    const many = await bus.publishMany('order.placed', [{ id: 3, sku: 'D' }, { id: 4 } as never]).catch((e: unknown) => e);
    expect(String(many)).toMatch(/item 1/);
    expect((many as ValidationError).issues.map((i) => i.path)).toEqual([[1, 'sku']]);
    await bus.flush();
    await new Promise((r) => setTimeout(r, 20));
    expect(got).toEqual([
      { id: 1, sku: 'A' },
      { id: 2, sku: 'B', note: 'n' },
    ]);
    expect(got[0]).not.toBe(payload);
    await bus.close();
  });
});
