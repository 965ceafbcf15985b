import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { createEventBus, defineEvents, registerTransport } from '../../src/index.js';
import { writeOnly } from './bus-harness.js';

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
