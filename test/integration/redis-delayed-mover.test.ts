/**
 * The delayed mover's polling on a real Redis: while nothing is scheduled it reads one counter per type and
 * runs the partitions' scripts only at its full pass; events another process schedules (which raise the counter)
 * are moved within its poll, its own events at their due times with no counter read, and events stored without
 * raising it (a writer that died in between) within its full pass. A stored event that is not an entry's fields
 * (written by someone else) does not stop the events due after it: it reaches the stream as an entry the
 * consumers dead-letter as malformed, holding the stored value. Due times are converted to Redis's clock: a host
 * clock minutes off Redis's gets its events by its own clock.
 */
import { Redis } from 'ioredis';
import { describe, expect, it, vi } from 'vitest';
import { createEventBus, type EventBus, type Logger } from '../../src/index.js';
import { FULL_PASS_MS, POLL_MS } from '../../transports/redis-streams/delayed-mover.js';
import type { RedisStreamsTransport } from '../../transports/redis-streams/index.js';
import { commandCalls, uniquePrefix } from '../helpers/redis-server.js';
import { sleep, waitFor } from '../helpers/wait.js';
import { perTestResources } from './fault-harness.js';
import { events, warningLogger } from './redis-common.js';

const { cleanup, server } = perTestResources();
const PARTITIONS = 8;

async function bus(block: Record<string, unknown>, service: string, logger: Logger | false = false): Promise<EventBus<typeof events>> {
  const b = await createEventBus({ service, events, transport: block as { type: 'redis-streams' }, logger });
  cleanup.push(() => b.close());
  return b;
}

async function client(url: string): Promise<Redis> {
  const c = new Redis(url);
  cleanup.push(() => c.disconnect());
  return c;
}

/** Script calls the server has run (EVALSHA and EVAL). */
async function scriptCalls(c: Redis): Promise<number> {
  const calls = await commandCalls(c);
  return (calls.get('evalsha') ?? 0) + (calls.get('eval') ?? 0);
}

/** Delivery lateness (ms after `amount`, the due time) per seq, of every event the subscriber's group receives. */
async function lateness(b: EventBus<typeof events>): Promise<Map<number, number>> {
  const late = new Map<number, number>();
  await b.subscribe('order.created', { group: 'g', blockMs: 200 }, (e) => void late.set(e.data.seq, Date.now() - e.data.amount));
  return late;
}

describe('redis-streams delayed mover polling', () => {
  it('runs no partition scripts between full passes while nothing is scheduled', async () => {
    const s = await server();
    const c = await client(s.url);
    const block = { type: 'redis-streams', url: s.url, prefix: uniquePrefix('mover-idle'), partitions: PARTITIONS };
    await lateness(await bus(block, 'idle-subscriber'));
    await sleep(300); // past the first pass
    const before = await scriptCalls(c);
    const windowMs = 3 * FULL_PASS_MS;
    await sleep(windowMs);
    const calls = (await scriptCalls(c)) - before;
    // One full pass per FULL_PASS_MS (a pass can straddle each end of the window), not a script per partition at
    // every poll.
    expect(calls).toBeLessThan((PARTITIONS * windowMs) / POLL_MS / 4);
    expect(calls).toBeLessThanOrEqual(PARTITIONS * (windowMs / FULL_PASS_MS + 1));
    expect(calls).toBeGreaterThanOrEqual(PARTITIONS * (windowMs / FULL_PASS_MS - 1));
  }, 30_000);

  it('moves events another process scheduled within the poll, not the full pass', async () => {
    const s = await server();
    const block = { type: 'redis-streams', url: s.url, prefix: uniquePrefix('mover-other'), partitions: PARTITIONS };
    const late = await lateness(await bus(block, 'subscriber'));
    await sleep(FULL_PASS_MS / 2); // a full pass has run and found nothing
    // The scheduler closes before the due time, so its own mover moves none of them.
    const scheduler = await bus(block, 'scheduler');
    const at = Date.now() + 400;
    await scheduler.publishMany(
      'order.created',
      Array.from({ length: 64 }, (_, seq) => ({ orderId: `o-${seq}`, amount: at, seq })),
      { deliverAt: at },
    );
    await scheduler.close();
    await waitFor(() => late.size === 64, 10_000, 'the 64 events');
    const worst = Math.max(...late.values());
    expect(Math.min(...late.values())).toBeGreaterThanOrEqual(0);
    expect(worst).toBeLessThan(FULL_PASS_MS / 2);
  }, 30_000);

  it('moves the events it scheduled at their due times without reading the counter first', async () => {
    const s = await server();
    const c = await client(s.url);
    const block = { type: 'redis-streams', url: s.url, prefix: uniquePrefix('mover-own'), partitions: 1 };
    const b = await bus(block, 'own');
    const late = await lateness(b);
    const count = 20;
    const start = Date.now() + 300;
    for (let seq = 0; seq < count; seq++) {
      const at = start + seq * 30; // closer together than POLL_MS: each pass runs for a due time known here
      await b.publish('order.created', { orderId: `o-${seq}`, amount: at, seq }, { deliverAt: at });
    }
    await sleep(start - Date.now()); // until then it polls, reading the counter
    const before = (await commandCalls(c)).get('get') ?? 0;
    await waitFor(() => late.size === count, 10_000, 'the events');
    expect(Math.min(...late.values())).toBeGreaterThanOrEqual(0);
    // A pass for a known due time runs the script alone; a counter read per pass would be at least `count`.
    expect(((await commandCalls(c)).get('get') ?? 0) - before).toBeLessThan(count / 4);
  }, 30_000);

  it('moves an event stored without raising the counter at its full pass', async () => {
    const s = await server();
    const c = await client(s.url);
    const prefix = uniquePrefix('mover-unsignalled');
    const block = { type: 'redis-streams', url: s.url, prefix, partitions: 1 };
    // A scheduled event as a bus stores it, taken from its keys and written again under another id, due soon,
    // with no counter raise: what a writer leaves that died between its scheduling write and the raise.
    const scheduler = await bus(block, 'scheduler');
    const far = Date.now() + 3_600_000;
    await scheduler.publish('order.created', { orderId: 'template', amount: far, seq: 0 }, { deliverAt: far });
    await scheduler.close();
    const [[id, json]] = Object.entries(await c.hgetall(`${prefix}:{order.created:0}:delayed:data`)) as [[string, string]];
    const late = await lateness(await bus(block, 'subscriber'));
    await sleep(300); // its first pass has run: the counter it saw is the current one
    const fields = JSON.parse(json) as string[];
    const at = Date.now() + 200;
    fields[fields.indexOf('id') + 1] = 'unsignalled';
    fields[fields.indexOf('data') + 1] = JSON.stringify({ orderId: 'unsignalled', amount: at, seq: 1 });
    await c.hset(`${prefix}:{order.created:0}:delayed:data`, 'unsignalled', JSON.stringify(fields));
    await c.zadd(`${prefix}:{order.created:0}:delayed`, at, 'unsignalled');
    expect(id).not.toBe('unsignalled');
    await waitFor(() => late.has(1), 10_000, 'the unsignalled event');
    expect(late.get(1)!).toBeGreaterThanOrEqual(0);
    expect(late.get(1)!).toBeLessThan(2 * FULL_PASS_MS);
  }, 30_000);

  it('a stored event that is not an entry is dead-lettered as malformed; the events due after it still move', async () => {
    const s = await server();
    const c = await client(s.url);
    const prefix = uniquePrefix('mover-malformed');
    const log = warningLogger();
    const b = await bus({ type: 'redis-streams', url: s.url, prefix, partitions: 1 }, 'subscriber', log);
    const late = await lateness(b);
    const zset = `${prefix}:{order.created:0}:delayed`;
    const data = `${prefix}:{order.created:0}:delayed:data`;
    // Due before the good events, so a mover that stopped at them would never reach those.
    const bad: [string, string][] = [
      ['not-json', '{not json'],
      ['not-array', '{"data":"x"}'],
      ['not-strings', '["data", {"nested": 1}]'],
      ['odd-fields', '["data"]'],
    ];
    for (const [id, value] of bad) {
      await c.hset(data, id, value);
      await c.zadd(zset, 1, id);
    }
    const at = Date.now() + 300;
    await b.publishMany(
      'order.created',
      Array.from({ length: 5 }, (_, seq) => ({ orderId: `o-${seq}`, amount: at, seq })),
      { deliverAt: at },
    );
    await waitFor(() => late.size === 5, 10_000, 'the events due after the malformed ones');
    const t = b.transport as RedisStreamsTransport;
    await waitFor(async () => (await t.deadLetters('order.created', 'g')).length === bad.length, 10_000, 'the malformed ones dead-lettered');
    const dead = await t.deadLetters('order.created', 'g');
    const raws = dead.map((d) => d.raw as { delayed: string; id: string });
    expect(raws.sort((x, y) => x.delayed.localeCompare(y.delayed))).toEqual(bad.map(([id, value]) => ({ delayed: value, id })).sort((x, y) => x.delayed.localeCompare(y.delayed)));
    expect(dead.every((d) => d.error?.startsWith('malformed entry'))).toBe(true);
    expect(await c.zcard(zset)).toBe(0);
    expect(await c.hlen(data)).toBe(0);
    const warned = log.warnings.filter((w) => w.msg?.includes('not entries'));
    expect(warned.reduce((n, w) => n + Number(w.obj.events), 0)).toBe(bad.length);
  }, 30_000);

  for (const skewMin of [10, -10]) {
    it(`a host clock ${Math.abs(skewMin)} minutes ${skewMin > 0 ? 'ahead of' : 'behind'} Redis's: events come due by the host's clock, none early`, async () => {
      const s = await server();
      const realNow = Date.now.bind(Date);
      const skew = vi.spyOn(Date, 'now').mockImplementation(() => realNow() + skewMin * 60_000);
      try {
        const b = await bus({ type: 'redis-streams', url: s.url, prefix: uniquePrefix('mover-skew'), partitions: 2 }, 'skewed');
        const late = await lateness(b);
        for (let k = 0; k < 20; k++) {
          const at = Date.now() + 200 + 10 * k;
          await b.publish('order.created', { orderId: `o-${k}`, amount: at, seq: k }, { deliverAt: at });
        }
        await waitFor(() => late.size === 20, 10_000, 'the 20 events');
        expect(Math.min(...late.values())).toBeGreaterThanOrEqual(0);
        expect(Math.max(...late.values())).toBeLessThan(FULL_PASS_MS);
      } finally {
        skew.mockRestore();
      }
    }, 30_000);
  }
});
