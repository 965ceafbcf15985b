/**
 * `bus.health()` on the memory transport: the transport's connection, each subscription's state (running,
 * stalled, closed) and last delivery, read at once; and its options checked.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { ConfigError, createEventBus, defineEvents, type EventBus } from '../../src/index.js';
import { sleep, uniqueName, waitFor } from '../helpers/wait.js';

const events = defineEvents({ 'job.queued': z.object({ n: z.number() }) });
const open: EventBus<typeof events>[] = [];
afterEach(async () => void (await Promise.allSettled(open.splice(0).map((b) => b.close()))));

async function bus(): Promise<EventBus<typeof events>> {
  const b = await createEventBus({ service: 'health', events, logger: false, transport: { type: 'memory', name: uniqueName('health') } });
  open.push(b);
  return b;
}

describe('bus.health() on the memory transport', () => {
  it('reports a connected transport and a running subscription, with its last delivery once one came', async () => {
    const startedAt = Date.now();
    const b = await bus();
    const seen: number[] = [];
    const sub = await b.subscribe('job.queued', { group: 'g' }, (e) => void seen.push(e.data.n));
    const before = b.health();
    expect(before.ok).toBe(true);
    expect(before.transport).toMatchObject({ type: 'memory', connected: true });
    expect(before.transport.since).toBeGreaterThanOrEqual(startedAt);
    expect(before.subscriptions).toEqual([{ type: 'job.queued', group: 'g', consumer: sub.consumer, state: 'running', lastDeliveryAt: undefined }]);
    const published = Date.now();
    await b.publish('job.queued', { n: 1 });
    await waitFor(() => seen.length === 1, 5000, 'the delivery');
    const after = b.health().subscriptions[0]!;
    expect(after.state).toBe('running');
    expect(after.lastDeliveryAt).toBeGreaterThanOrEqual(published);
    expect(sub.health()).toEqual(after);
  });

  it('a subscription whose handlers hold every slot with no handler starting for stallMs is stalled, and runs again once they end', async () => {
    const b = await bus();
    let release!: () => void;
    const held = new Promise<void>((resolve) => (release = resolve));
    await b.subscribe('job.queued', { group: 'slow', concurrency: 2 }, () => held);
    await b.publishMany('job.queued', [{ n: 1 }, { n: 2 }, { n: 3 }]);
    await waitFor(() => b.health().subscriptions[0]!.lastDeliveryAt !== undefined, 5000, 'the first deliveries');
    await sleep(120);
    const h = b.health({ stallMs: 100 });
    expect(h.subscriptions[0]!.state).toBe('stalled');
    expect(h.ok).toBe(false);
    // The default stallMs (30 s) has not passed.
    expect(b.health().subscriptions[0]!.state).toBe('running');
    release();
    await b.idle({ timeoutMs: 5000 });
    expect(b.health({ stallMs: 100 }).subscriptions[0]!.state).toBe('running');
  });

  it('a closing subscription is closed; a closed bus is disconnected and has none', async () => {
    const b = await bus();
    let release!: () => void;
    const held = new Promise<void>((resolve) => (release = resolve));
    const sub = await b.subscribe('job.queued', { group: 'g' }, () => held);
    await b.publish('job.queued', { n: 1 });
    await waitFor(() => sub.health().lastDeliveryAt !== undefined, 5000, 'the delivery');
    const closing = sub.close();
    expect(sub.health().state).toBe('closed');
    expect(b.health().ok).toBe(true);
    release();
    await closing;
    expect(b.health().subscriptions).toEqual([]);
    const closedAt = Date.now();
    await b.close();
    const h = b.health();
    expect(h.ok).toBe(false);
    expect(h.transport.connected).toBe(false);
    expect(h.transport.since).toBeLessThanOrEqual(Date.now());
    expect(h.transport.since).toBeGreaterThanOrEqual(closedAt);
  });

  it('refuses a stallMs that is not a positive integer with a ConfigError', async () => {
    const b = await bus();
    expect(() => b.health({ stallMs: 0 })).toThrow(ConfigError);
    expect(() => b.health({ stallMs: 'soon' as unknown as number })).toThrow(/stallMs/);
  });
});
