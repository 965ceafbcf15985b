/**
 * Delayed delivery on Redis (`Transport.scheduling`; docs/delayed-delivery.md). `schedule` stores each event in
 * its partition's sorted set (score: due time in Redis's clock) and data hash in one script call, and resolves once
 * Redis acknowledged it: from then on it is as durable as the server's persistence makes a write. The
 * `DelayedMover` of every process that schedules on or subscribes to a type moves that type's due events to
 * their streams (delayed-scripts.ts): no separate scheduler, and one atomic script per partition, so several
 * movers never move an event twice.
 */
import { describeError } from '../../src/errors.js';
import type { Logger } from '../../src/logger.js';
import type { OutgoingEvent } from '../../src/transport.js';
import type { TransportScheduling } from '../../src/scheduling.js';
import { pushEventFields, type Encode } from './codec.js';
import type { ResolvedConfig } from './config.js';
import type { Client } from './connection.js';
import { cancelDelayed, storeDelayed } from './delayed-scripts.js';
import { DelayedMover } from './delayed-mover.js';
import { delayedDataKey, delayedKey, delayedSeqKey } from './keys.js';
import type { ServerClock } from './server-clock.js';

/** Most events per script call. */
const CHUNK = 1000;

/** Scheduled events of one partition waiting for the next write, and the calls they settle. */
interface PendingWrite {
  readonly type: string;
  readonly partition: number;
  /** Triples of id, due score and entry fields (JSON), as `storeDelayed` takes them. */
  readonly args: (string | number)[];
  readonly calls: Set<Call>;
}

/** One `schedule` call: settles once every partition write with its events has. */
interface Call {
  left: number;
  resolve(): void;
  reject(err: unknown): void;
}

export class RedisScheduling implements TransportScheduling {
  readonly mover: DelayedMover;
  private synced: Promise<void> | undefined;
  /** Writes gathered in this turn of the event loop, by `type` and partition; sent together at the next turn. */
  private pending = new Map<string, PendingWrite>();

  constructor(
    private readonly config: ResolvedConfig,
    private readonly client: Client,
    private readonly clock: ServerClock,
    private readonly source: string,
    private readonly partitionsFor: (type: string) => number,
    private readonly serializer: (type: string) => Encode,
    private readonly logger: Logger,
  ) {
    this.mover = new DelayedMover(config, client, clock, partitionsFor, logger);
  }

  async schedule(events: readonly OutgoingEvent[], dueAt: number): Promise<void> {
    if (events.length === 0) return;
    await (this.synced ??= this.clock.sync());
    // In Redis's clock, converted with the highest offset the last measurement allows: never due there before `dueAt` here.
    const score = this.clock.latest(dueAt);
    const type = events[0]!.type;
    await new Promise<void>((resolve, reject) => this.gather(type, events, score, { left: 0, resolve, reject }));
    this.mover.track(type);
    this.mover.wake(type, dueAt);
  }

  /** Adds the call's events to the pending writes of their partitions; the first of a turn arranges the flush. */
  private gather(type: string, events: readonly OutgoingEvent[], score: number, call: Call): void {
    const encode = this.serializer(type);
    if (this.pending.size === 0) setImmediate(() => this.flush());
    for (const ev of events) {
      const key = `${ev.partition}:${type}`;
      let w = this.pending.get(key);
      if (w === undefined) this.pending.set(key, (w = { type, partition: ev.partition, args: [], calls: new Set() }));
      const fields: (string | number)[] = [];
      pushEventFields(fields, ev, this.source, encode);
      w.args.push(ev.id, score, JSON.stringify(fields));
      if (!w.calls.has(call)) {
        w.calls.add(call);
        call.left++;
      }
    }
  }

  /**
   * Sends the turn's writes, one script call per partition (in chunks), then raises each type's schedule counter
   * once its writes have settled (movers elsewhere look at the partitions again), and settles their calls.
   */
  private flush(): void {
    const byType = new Map<string, PendingWrite[]>();
    for (const w of this.pending.values()) {
      const ofType = byType.get(w.type);
      if (ofType === undefined) byType.set(w.type, [w]);
      else ofType.push(w);
    }
    this.pending = new Map();
    for (const [type, writes] of byType) {
      const stored = writes.map((w) => this.storeAll(w));
      const signalled = Promise.allSettled(stored).then(() => this.signal(type));
      writes.forEach((w, k) => {
        stored[k]!.then(() => signalled).then(
          () => {
            for (const c of w.calls) if (--c.left === 0) c.resolve();
          },
          (err: unknown) => {
            for (const c of w.calls) c.reject(err);
          },
        );
      });
    }
  }

  /** A partition's pending write, in chunks of at most CHUNK events per script call. */
  private storeAll(w: PendingWrite): Promise<unknown> {
    const chunks: Promise<void>[] = [];
    for (let i = 0; i < w.args.length; i += 3 * CHUNK) chunks.push(this.store(w.type, w.partition, w.args.length <= 3 * CHUNK ? w.args : w.args.slice(i, i + 3 * CHUNK)));
    return Promise.all(chunks);
  }

  /** One atomic step: the events' data, then their ids in the sorted set (a mover never sees an id without data). */
  private async store(type: string, partition: number, args: readonly (string | number)[]): Promise<void> {
    const prefix = this.config.prefix;
    await storeDelayed.runKeys(this.client, [delayedKey(prefix, type, partition), delayedDataKey(prefix, type, partition)], args);
  }

  /**
   * Raises the type's schedule counter. The events are stored whether or not it goes through: a failure only
   * delays their move elsewhere to the movers' full pass (`FULL_PASS_MS`), so it does not fail the publish.
   */
  private async signal(type: string): Promise<void> {
    try {
      await this.client.incr(delayedSeqKey(this.config.prefix, type));
    } catch (err) {
      this.logger.debug({ err: describeError(err), type }, 'could not raise the schedule counter; other movers see the events at their full pass');
    }
  }

  async cancel(type: string, id: string): Promise<boolean> {
    const prefix = this.config.prefix;
    const n = this.partitionsFor(type);
    const replies = await Promise.all(Array.from({ length: n }, (_, p) => cancelDelayed.runKeys(this.client, [delayedKey(prefix, type, p), delayedDataKey(prefix, type, p)], [id])));
    return replies.some((r) => Number(r) === 1);
  }
}
