/**
 * Delayed delivery on Redis (`Transport.scheduling`; docs/delayed-delivery.md). `schedule` stores each event in
 * its partition's sorted set (score: due time in Redis's clock) and data hash in one MULTI, and resolves once
 * Redis acknowledged it: from then on it is as durable as the server's persistence makes a write. The
 * `DelayedMover` of every process that schedules on or subscribes to a type moves that type's due events to
 * their streams (delayed-scripts.ts): no separate scheduler, and one atomic script per partition, so several
 * movers never move an event twice.
 */
import type { Logger } from '../../src/logger.js';
import type { OutgoingEvent } from '../../src/transport.js';
import type { TransportScheduling } from '../../src/scheduling.js';
import { pushEventFields, type Encode } from './codec.js';
import type { ResolvedConfig } from './config.js';
import type { Client } from './connection.js';
import { cancelDelayed } from './delayed-scripts.js';
import { DelayedMover } from './delayed-mover.js';
import { delayedDataKey, delayedKey } from './keys.js';
import type { ServerClock } from './server-clock.js';

/** Events per MULTI of a `schedule` call (a call's events of one partition are written in such chunks). */
const CHUNK = 1000;

export class RedisScheduling implements TransportScheduling {
  readonly mover: DelayedMover;
  private synced: Promise<void> | undefined;

  constructor(
    private readonly config: ResolvedConfig,
    private readonly client: Client,
    private readonly clock: ServerClock,
    private readonly source: string,
    private readonly partitionsFor: (type: string) => number,
    private readonly serializer: (type: string) => Encode,
    logger: Logger,
  ) {
    this.mover = new DelayedMover(config, client, clock, partitionsFor, logger);
  }

  async schedule(events: readonly OutgoingEvent[], dueAt: number): Promise<void> {
    if (events.length === 0) return;
    await (this.synced ??= this.clock.sync());
    // In Redis's clock, converted with the highest offset the last TIME allows: never due there before `dueAt` here.
    const score = Math.ceil(this.clock.latest(dueAt));
    const type = events[0]!.type;
    const encode = this.serializer(type);
    const byPartition = new Map<number, OutgoingEvent[]>();
    for (const ev of events) {
      let list = byPartition.get(ev.partition);
      if (list === undefined) byPartition.set(ev.partition, (list = []));
      list.push(ev);
    }
    const writes: Promise<void>[] = [];
    for (const [p, list] of byPartition) {
      for (let i = 0; i < list.length; i += CHUNK) writes.push(this.store(type, p, list.slice(i, i + CHUNK), score, encode));
    }
    await Promise.all(writes);
    this.mover.track(type);
    this.mover.wake(score);
  }

  /** One MULTI: the events' data, then their ids in the sorted set (a mover never sees an id without data). */
  private async store(type: string, partition: number, events: readonly OutgoingEvent[], score: number, encode: Encode): Promise<void> {
    const data: string[] = [];
    const members: (string | number)[] = [];
    for (const ev of events) {
      const fields: (string | number)[] = [];
      pushEventFields(fields, ev, this.source, encode);
      data.push(ev.id, JSON.stringify(fields));
      members.push(score, ev.id);
    }
    const prefix = this.config.prefix;
    const replies = await this.client
      .multi()
      .hset(delayedDataKey(prefix, type, partition), ...data)
      .zadd(delayedKey(prefix, type, partition), ...members)
      .exec();
    const failed = replies?.find(([err]) => err !== null)?.[0];
    if (replies === null || replies === undefined) throw new Error('MULTI of a delayed event was discarded');
    if (failed) throw failed;
  }

  async cancel(type: string, id: string): Promise<boolean> {
    const prefix = this.config.prefix;
    const n = this.partitionsFor(type);
    const replies = await Promise.all(Array.from({ length: n }, (_, p) => cancelDelayed.runKeys(this.client, [delayedKey(prefix, type, p), delayedDataKey(prefix, type, p)], [id])));
    return replies.some((r) => Number(r) === 1);
  }
}
