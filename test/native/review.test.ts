import { afterEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { BackpressureError, createEventBus, defineEvents, PayloadTooLargeError, type EventBus } from '../../src/index.js';
import type { NativeTransport } from '../../transports/native/index.js';
import { partitionForKey } from '../../src/partition.js';
import { uniqueName, waitFor } from '../helpers/wait.js';

const events = defineEvents({
  tick: z.object({ seq: z.number().int(), pad: z.string().optional() }),
});
type Bus = EventBus<typeof events>;
const ticks = (n: number, from = 0) => Array.from({ length: n }, (_, i) => ({ seq: from + i }));
const fixture = (name: string) => new URL(`./fixtures/${name}`, import.meta.url);
/** A key that lands on `partition` of `partitions`. */
const keyOf = (partition: number, partitions: number) => {
  for (let i = 0; ; i++) if (partitionForKey(`k${i}`, partitions) === partition) return `k${i}`;
};

/** A logger that keeps error() calls. */
function quietLogger() {
  const errors: string[] = [];
  const logger = {
    level: 'error',
    error: (_: unknown, msg: string) => void errors.push(msg),
    warn() {},
    info() {},
    debug() {},
    trace() {},
    fatal() {},
    child() {
      return logger;
    },
  };
  return { errors, logger };
}

describe.each(['native', 'js'] as const)('native transport review (%s)', (implementation) => {
  const open: Bus[] = [];
  afterEach(async () => {
    await Promise.allSettled(open.splice(0).map((b) => b.close()));
  });
  async function bus(transport: Record<string, unknown> = {}, extra: Record<string, unknown> = {}): Promise<Bus> {
    const b = await createEventBus({
      service: 'native-review',
      events,
      transport: { type: 'native', implementation, name: uniqueName('nr'), ...transport },
      ...extra,
    });
    open.push(b);
    return b;
  }
  const transportOf = (b: Bus) => b.transport as NativeTransport;

  it('startFrom 0: a retained backlog larger than the ring is delivered before events published during the replay', async () => {
    const b = await bus({ capacity: 8, batchSize: 4, retain: 1000 });
    await b.publishMany('tick', ticks(40));
    const seen: number[] = [];
    let published: Promise<void> | undefined;
    await b.subscribe('tick', { group: 'late', startFrom: '0' }, (e) => {
      seen.push(e.data.seq);
      // While the history is still being replayed (the ring holds 8 of 40); not awaited here: under block it
      // waits for room this consumer makes.
      published ??= b.publish('tick', { seq: 1000 });
    });
    await waitFor(() => seen.length === 41, 10_000, '41 events');
    await published;
    expect(seen).toEqual([...ticks(40).map((t) => t.seq), 1000]);
  });

  it('an event too large for any ring is rejected even with no group yet, and does not break a later startFrom 0', async () => {
    const b = await bus({ capacity: 16, arenaBytes: 65_536 });
    await b.publish('tick', { seq: 1 });
    await expect(b.publish('tick', { seq: 2 }, { headers: { big: 'x'.repeat(40_000) } })).rejects.toBeInstanceOf(PayloadTooLargeError);
    await b.publish('tick', { seq: 3 });
    const seen: number[] = [];
    await b.subscribe('tick', { group: 'late', startFrom: '0' }, (e) => void seen.push(e.data.seq));
    await waitFor(() => seen.length === 2, 5_000, '2 events');
    expect(seen).toEqual([1, 3]);
  });
});
