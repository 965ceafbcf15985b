/**
 * Publishing drivers shared by scenarios, and delivery verification of publish-only runs.
 */
import type { EventInput } from '../../src/index.js';
import type { BenchBus } from './bus.js';
import { benchBus } from './bus.js';
import { DeliveryTracker, RepeatedDeliveryTracker, sizedPayloads, type benchEvents } from './payload.js';
import type { BenchConfig, Measured, RunContext } from './types.js';

export type PublishMode =
  /** `publishers` async loops (usually one) calling publish() and awaiting the promises in groups of `group`. */
  | 'publish-groups'
  /** publishMany() with arrays of `group`, awaited one after another. */
  | 'publish-many'
  /** `publishers` concurrent async loops, each awaiting every publish(). */
  | 'concurrent';

type EventType = 'bench.sized' | 'bench.trade';

/** What `publish(type, ...)` takes for an event type of the bench bus. */
type PayloadOf<K extends EventType> = EventInput<typeof benchEvents, K>;

export async function drivePublish<K extends EventType>(bus: BenchBus, type: K, payloads: readonly PayloadOf<K>[], mode: PublishMode, group: number, publishers: number): Promise<void> {
  const n = payloads.length;
  if (mode === 'publish-groups') {
    const per = Math.ceil(n / publishers);
    const loop = async (from: number, to: number) => {
      for (let i = from; i < to; i += group) {
        const end = Math.min(to, i + group);
        const ps: Promise<void>[] = new Array(end - i);
        for (let j = i; j < end; j++) ps[j - i] = bus.publish(type, payloads[j]!);
        await Promise.all(ps);
      }
    };
    if (publishers === 1) await loop(0, n);
    else await Promise.all(Array.from({ length: publishers }, (_, p) => loop(p * per, Math.min(n, (p + 1) * per))));
  } else if (mode === 'publish-many' && group >= n) {
    await bus.publishMany(type, payloads);
  } else if (mode === 'publish-many') {
    const chunks: PayloadOf<K>[][] = [];
    for (let i = 0; i < n; i += group) chunks.push(payloads.slice(i, i + group));
    for (const c of chunks) await bus.publishMany(type, c);
  } else {
    const per = Math.ceil(n / publishers);
    const loops: Promise<void>[] = [];
    for (let p = 0; p < publishers; p++) {
      const from = p * per;
      const to = Math.min(n, from + per);
      loops.push(
        (async () => {
          for (let i = from; i < to; i++) await bus.publish(type, payloads[i]!);
        })(),
      );
    }
    await Promise.all(loops);
  }
  await bus.flush();
}

/** What the transport accepted, as counted by the transport itself (noop) or the bus's batcher. */
export function acceptedCount(bus: BenchBus): { count: number; by: string } {
  const t = bus.transport as unknown as { accepted?: number };
  if (typeof t.accepted === 'number') return { count: t.accepted, by: 'noop transport accepted-events counter' };
  return { count: bus.stats().events, by: 'bus stats(): events written by the transport' };
}

/**
 * Reads a publish-only run back through a fresh consumer group from the start of the stream and counts
 * distinct payload ids (Redis: proves the events are in Redis and decodable by our own consumer).
 * `expected`: payload ids 0 .. expected - 1, once each; or, for a pool of payloads published over and
 * over, how many times each id was published.
 */
export async function readBack(config: BenchConfig, type: EventType, expected: number | Uint32Array, timeoutMs = 15_000): Promise<DeliveryTracker> {
  const bus = await benchBus(config);
  const tracker = typeof expected === 'number' ? new DeliveryTracker(expected) : new RepeatedDeliveryTracker(expected);
  const group = `verify-${Date.now()}`;
  try {
    await bus.subscribe(type, { group, startFrom: '0', concurrency: 64 }, (e) => {
      tracker.mark((e.data as { id: number }).id);
    });
    await tracker.waitAll(timeoutMs);
    // Every expected event seen: read on to the end of the streams (the group has nothing left: bus.idle), so
    // entries past them (duplicates) are counted too.
    if (tracker.complete) await bus.idle({ type, timeoutMs });
  } finally {
    await bus.close();
  }
  return tracker;
}

export const READ_BACK = 'read back from Redis through a new consumer group';

/** `readBack` as the delivery check of a publish-only iteration (`publishMeasured`'s `check`). */
export async function readBackCheck(config: BenchConfig, type: EventType, expected: number | Uint32Array): Promise<{ received: number; unique: number; by: string }> {
  const t = await readBack(config, type, expected);
  return { received: t.received, unique: t.unique, by: typeof expected === 'number' ? READ_BACK : `${READ_BACK}, each payload id counted against the times it was published` };
}

/** Measured figures of a publish-only run. */
export function publishMeasured(sent: number, bytesEach: number, check: { received: number; unique?: number; by: string }): Measured {
  return { events: sent, sent, received: check.received, unique: check.unique ?? check.received, bytes: sent * bytesEach, verifiedBy: check.by };
}

/**
 * A publish-only iteration: `messageCount` sized payloads made before the window, `drivePublish` timed,
 * delivery checked by what the transport itself accepted; on Redis (measured iterations) by reading
 * every event back through a new consumer group, after the publishing bus is closed.
 */
export async function timedPublish(ctx: RunContext, mode: PublishMode, group: number, publishers: number): Promise<Measured> {
  const c = ctx.config;
  const payloads = sizedPayloads(c.messageCount, c.messageSize);
  const bus = await benchBus(c);
  let acc: { count: number; by: string };
  try {
    await ctx.timed(() => drivePublish(bus, 'bench.sized', payloads, mode, group, publishers));
    acc = acceptedCount(bus);
  } finally {
    await bus.close();
  }
  if (c.transport === 'redis' && !ctx.warmup) return publishMeasured(payloads.length, c.messageSize, await readBackCheck(c, 'bench.sized', payloads.length));
  return publishMeasured(payloads.length, c.messageSize, { received: acc.count, by: acc.by });
}
