/**
 * `bus.groupCounts()` and `admin.groups()` on redis-streams count events, not stream entries, against a real
 * redis-server: batch entries hold many events; a backlog past the sample bound is extrapolated; retry streams
 * count; a user without scripts gets the same counts through plain commands.
 */
import { Registry } from 'prom-client';
import { describe, expect, it } from 'vitest';
import { createEventBus, type EventBus } from '../../src/index.js';
import { eventlaneMetrics } from '../../src/prometheus/index.js';
import type { RedisStreamsTransport } from '../../transports/redis-streams/index.js';
import { SAMPLE_ENTRIES } from '../../transports/redis-streams/group-events.js';
import { uniquePrefix } from '../helpers/redis-server.js';
import { waitFor } from '../helpers/wait.js';
import { events, fastRead, orders, redisForFile } from '../integration/redis-common.js';

const r = redisForFile();

async function bus(prefix: string, partitions: number, url = r.server.url): Promise<EventBus<typeof events>> {
  const b = await createEventBus({ service: 'counts', events, logger: false, transport: { type: 'redis-streams', url, prefix, partitions } });
  r.cleanup.push(() => b.close());
  return b;
}

/** Stream entries over the type's partition streams. */
async function entries(prefix: string, partitions: number): Promise<number> {
  let n = 0;
  for (let p = 0; p < partitions; p++) n += Number(await r.raw.xlen(`${prefix}:{order.created:${p}}`));
  return n;
}

const G = [{ type: 'order.created' as const, group: 'g' }];

describe('redis-streams: group counts in events', () => {
  it('a batched backlog with no consumer running is lag in events; held handlers make pending in events; 0 once finished', async () => {
    const prefix = uniquePrefix('counts');
    const N = 2000;
    const b = await bus(prefix, 2);
    await (await b.subscribe('order.created', { group: 'g', ...fastRead }, () => {})).close();
    await b.publishMany('order.created', orders(N));
    expect(await entries(prefix, 2)).toBeLessThan(N / 10); // batch entries
    // The collector's gauges read the same counts at scrape time; it is given the group, which has no member yet.
    const registry = new Registry();
    const metrics = eventlaneMetrics({ registry, buses: [{ stats: () => b.stats(), groupCounts: () => b.groupCounts({ groups: G }) }] });
    r.cleanup.push(() => metrics.close());
    const gauge = async (name: string): Promise<number> => {
      const line = (await registry.metrics()).split('\n').find((l) => l.startsWith(`${name}{type="order.created",group="g"} `));
      return Number(line!.split(' ')[1]);
    };
    expect(await gauge('eventlane_group_lag_events')).toBe(N);
    expect(await gauge('eventlane_group_pending_events')).toBe(0);
    expect(await b.groupCounts({ groups: G })).toEqual([{ type: 'order.created', group: 'g', lagEvents: N, pendingEvents: 0, estimated: false }]);

    let release!: () => void;
    const gate = new Promise<void>((resolve) => (release = resolve));
    let started = 0;
    await b.subscribe('order.created', { group: 'g', concurrency: 8, ...fastRead }, async () => {
      started++;
      await gate;
    });
    await waitFor(async () => started === 8, 10_000, 'eight handlers holding their events');
    const [held] = await b.groupCounts();
    expect(held!.lagEvents! + held!.pendingEvents!).toBe(N);
    expect(held!.pendingEvents).toBeGreaterThanOrEqual(8);
    const [lag, pending] = [await gauge('eventlane_group_lag_events'), await gauge('eventlane_group_pending_events')];
    expect(lag + pending).toBe(N);
    expect(pending).toBeGreaterThanOrEqual(8);
    release();
    await b.idle({ timeoutMs: 20_000 });
    expect(await b.groupCounts()).toEqual([{ type: 'order.created', group: 'g', lagEvents: 0, pendingEvents: 0, estimated: false }]);
    expect([await gauge('eventlane_group_lag_events'), await gauge('eventlane_group_pending_events')]).toEqual([0, 0]);
  });

  it('past the sample bound the rest is extrapolated from the mean events per entry, also without scripts (ACL)', async () => {
    const prefix = uniquePrefix('sampled');
    const b = await bus(prefix, 1);
    await (await b.subscribe('order.created', { group: 'g', ...fastRead }, () => {})).close();
    const calls = SAMPLE_ENTRIES + 50;
    for (let i = 0; i < calls; i++) await b.publishMany('order.created', orders(10, i * 10));
    expect(await entries(prefix, 1)).toBe(calls);
    const want = [{ type: 'order.created', group: 'g', lagEvents: calls * 10, pendingEvents: 0, estimated: true }];
    expect(await b.groupCounts({ groups: G })).toEqual(want);

    await r.raw.call('ACL', 'SETUSER', 'countsnoscripts', 'on', '>pw', '~*', '&*', '+@all', '-@scripting');
    r.cleanup.push(() => r.raw.call('ACL', 'DELUSER', 'countsnoscripts'));
    const plain = await bus(prefix, 1, r.server.url.replace('redis://', 'redis://countsnoscripts:pw@'));
    expect(await plain.groupCounts({ groups: G })).toEqual(want);
  });

  it("counts the group's retry streams (one event per entry), and admin.groups() gives entries and events side by side", async () => {
    const prefix = uniquePrefix('retries');
    const b = await bus(prefix, 2);
    const failOnce = new Set<number>();
    await b.subscribe('order.created', { group: 'g', concurrency: 4, ...fastRead, retry: { backoff: { initialMs: 60_000, maxMs: 60_000 } } }, (e) => {
      if (e.data.seq < 5 && !failOnce.has(e.data.seq)) {
        failOnce.add(e.data.seq);
        throw new Error('later');
      }
    });
    await b.publishMany('order.created', orders(500));
    await waitFor(async () => failOnce.size === 5, 10_000, 'five events failed once');
    await waitFor(
      async () => {
        const [c] = await b.groupCounts();
        return c!.lagEvents! + c!.pendingEvents! === 5;
      },
      10_000,
      'only the five retries left',
    );
    const admin = await (b.transport as RedisStreamsTransport).admin();
    const [g] = await admin.groups('order.created');
    expect(g).toMatchObject({ group: 'g', retrying: 5, estimated: false });
    expect(g!.lagEvents! + g!.pendingEvents!).toBe(5);
  });
});
