import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import {
  ConfigError,
  createEventBus,
  defineEvents,
  PayloadTooLargeError,
  PublishPartialError,
  registerTransport,
  SerializationError,
  TransportError,
  UnknownTransportError,
  ValidationError,
} from '../../src/index.js';
import type { PublishUnit, Transport } from '../../src/transport-kit.js';

const events = defineEvents({
  'user.signed-up': z.object({ userId: z.string(), email: z.string().email() }),
  'blob.stored': z.object({ name: z.string(), meta: z.unknown() }),
});

describe('createEventBus config validation', () => {
  it('names the bad field', async () => {
    await expect(createEventBus({ service: '', events, transport: { type: 'memory' } })).rejects.toMatchObject({
      code: 'ERR_CONFIG',
      message: expect.stringContaining('service'),
    });
    await expect(createEventBus({ service: 's', events, transport: { type: 'memory' }, batching: { maxEvents: 0 } })).rejects.toMatchObject({ message: expect.stringContaining('batching.maxEvents') });
    await expect(createEventBus({ service: 's', events, transport: { type: 'memory', partitions: -1 } })).rejects.toMatchObject({
      message: expect.stringContaining('transport.partitions'),
    });
    await expect(
      // @ts-expect-error not an option of the memory transport (refused at compile time too)
      createEventBus({ service: 's', events, transport: { type: 'memory', bogus: 1 } }),
    ).rejects.toBeInstanceOf(ConfigError);
  });

  it('rejects an unknown transport type listing the registered ones', async () => {
    const err = await createEventBus({ service: 's', events, transport: { type: 'carrier-pigeon' } }).catch((e) => e);
    expect(err).toBeInstanceOf(UnknownTransportError);
    expect(err.message).toContain('memory');
  });

  it('rejects an event map not made by defineEvents, and bad schemas', async () => {
    await expect(createEventBus({ service: 's', events: {} as never, transport: { type: 'memory' } })).rejects.toBeInstanceOf(ConfigError);
    expect(() => defineEvents({ 'bad name!': z.string() })).toThrow(ConfigError);
    expect(() => defineEvents({ ok: 'not a schema' as never })).toThrow(/zod/);
  });
});

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

describe('transport registry', () => {
  it('lets a third-party transport register itself and be picked by config', async () => {
    const written: PublishUnit[] = [];
    let plan: unknown;
    registerTransport('recording', (config, ctx) => {
      plan = ctx.readerPlan?.('user.signed-up');
      const t: Transport = {
        type: 'recording',
        capabilities: { encoding: 'json', maxInFlight: 1, maxEventBytes: 1 << 20 },
        connect: async () => {},
        partitionsFor: () => Number(config.partitions ?? 1),
        write: async (units) => {
          written.push(...units);
        },
        subscribe: async () => ({ close: async () => {} }),
        close: async () => {},
      };
      return t;
    });
    const bus = await createEventBus({ service: 'svc', events, transport: { type: 'recording', partitions: 3 } });
    await bus.publish('user.signed-up', { userId: 'u1', email: 'a@b.co' }, { key: 'u1' });
    await bus.close();
    expect(written).toHaveLength(1);
    expect(written[0]!.events[0]).toMatchObject({ type: 'user.signed-up', json: '{"userId":"u1","email":"a@b.co"}', key: 'u1' });
    expect(written[0]!.partition).toBeLessThan(3);
    // The type's payload reader plan, for transports that parse payload JSON (src/json-reader.ts).
    expect(plan).toMatchObject({ t: 'object', fields: [{ key: 'userId' }, { key: 'email' }] });
  });
});

describe('logging', () => {
  it('uses an injected logger', async () => {
    const lines: { obj: object; msg?: string }[] = [];
    const log = (obj: object, msg?: string) => void lines.push({ obj, msg });
    const logger = { debug: log, info: log, warn: log, error: log };
    const bus = await createEventBus({ service: 's', events, transport: { type: 'memory' }, logger });
    await bus.close();
    expect(lines.some((l) => l.msg === 'event bus closed')).toBe(true);
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

/** A publish-only transport for the batching tests below: `write` is the test's. */
function writeOnly(type: string, maxInFlight: number, write: (units: readonly PublishUnit[]) => Promise<void> | void): Transport {
  return {
    type,
    capabilities: { encoding: 'none', maxInFlight, maxEventBytes: Number.MAX_SAFE_INTEGER },
    async connect() {},
    partitionsFor: () => 1,
    async write(units: readonly PublishUnit[]) {
      await write(units);
    },
    async subscribe() {
      throw new Error('not used');
    },
    async close() {},
  } as Transport;
}

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

describe('close() and a publishMany waiting for room', () => {
  it('sends every slice of a call accepted before close()', async () => {
    const evs = defineEvents({ n: z.object({ i: z.number().int() }) });
    let written = 0;
    registerTransport('slow-close', async () =>
      writeOnly('slow-close', 1, async (units) => {
        await new Promise((r) => setTimeout(r, 1));
        for (const u of units) written += u.events.length;
      }),
    );
    const bus = await createEventBus({ service: 's', events: evs, transport: { type: 'slow-close' }, batching: { maxEvents: 100, maxPendingEvents: 200 } });
    const call = bus.publishMany(
      'n',
      Array.from({ length: 2_000 }, (_, i) => ({ i })),
    );
    await bus.close();
    await call;
    expect(written).toBe(2_000);
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

describe('close() while handlers run', () => {
  it("sends what the handlers it drains publish (a handler's next event), then refuses publishes", async () => {
    const evs = defineEvents({ 'order.created': z.object({ id: z.string() }), 'order.billed': z.object({ id: z.string() }) });
    const name = `close-drain-${process.pid}`;
    const a = await createEventBus({ service: 'a', events: evs, transport: { type: 'memory', name } });
    const b = await createEventBus({ service: 'b', events: evs, transport: { type: 'memory', name } });
    const billed: string[] = [];
    await b.subscribe('order.billed', { group: 'ledger' }, (e) => void billed.push(e.data.id));
    let started!: () => void;
    const running = new Promise<void>((r) => (started = r));
    const failures: unknown[] = [];
    await a.subscribe('order.created', { group: 'billing' }, async (e) => {
      started();
      await new Promise((r) => setTimeout(r, 50)); // charging...
      await a.publish('order.billed', { id: e.data.id }).catch((err: unknown) => void failures.push(err));
    });
    await a.publish('order.created', { id: 'o-1' });
    await running;
    await a.close();
    // A handler drained by close() may still publish: its event is sent, not refused with ClosedError.
    expect(failures).toEqual([]);
    await b.idle({ timeoutMs: 2000 });
    expect(billed).toEqual(['o-1']);
    await expect(a.publish('order.billed', { id: 'o-2' })).rejects.toMatchObject({ code: 'ERR_CLOSED' });
    await b.close();
  });
});
