/**
 * The bus's path for delayed events (`publish` or `publishMany` with `delayMs` or `deliverAt`), decided once per
 * call from its options: the payloads are validated and made into events as on the undelayed paths, then handed
 * to the transport's `TransportScheduling` in one call, or, for a transport without it, held in the bus's
 * in-process `DueQueue` and published as any event when due. A delayed publish resolves with its event's id
 * (publishMany: the ids, in payload order), the handle `cancelScheduled` takes.
 */
import type { PublishManyOptions } from './bus-types.js';
import type { PublishOptions } from './envelope.js';
import { EventlaneError, TransportError, ConfigError } from './errors.js';
import { DueQueue, type DueEntry } from './due-queue.js';
import type { Logger } from './logger.js';
import { EventMeta } from './outgoing.js';
import { checkedKey } from './publish-options.js';
import type { Publisher } from './publisher.js';
import type { OutgoingEvent, Transport } from './transport.js';
import type { TypeState } from './type-plans.js';

interface Held {
  readonly t: TypeState;
  readonly event: OutgoingEvent;
  /** What the event counts toward `batching.maxBytes`. */
  readonly size: number;
}

export class DelayedPublisher {
  /** The in-process schedule, made on first use by a bus whose transport has no `scheduling`. */
  private local: DueQueue<Held> | undefined;

  constructor(
    private readonly pub: Publisher,
    private readonly transport: Transport,
    private readonly logger: Logger,
  ) {}

  /** One checked `publish` (its options' bytes `extra`) due at `dueAt`: resolves with the event's id once scheduled. */
  publish(t: TypeState, data: unknown, options: PublishOptions, extra: number, dueAt: number): Promise<string> {
    const value = this.pub.parse(t, data, -1, extra);
    const event = this.pub.make(t, value, this.pub.parsedJson, new EventMeta(t.name, Date.now(), options), options.key);
    return this.schedule(t, [event], [this.pub.parsedSize], dueAt).then(() => event.id);
  }

  /** A checked `publishMany` call (its options' bytes `extra`) due at `dueAt`: every payload is validated before any is scheduled. */
  publishMany(t: TypeState, payloads: readonly unknown[], options: PublishManyOptions<never>, extra: number, dueAt: number): Promise<string[]> {
    const meta = new EventMeta(t.name, Date.now(), options);
    const keyOpt = options.key as string | ((data: unknown, index: number) => unknown) | undefined;
    const values: unknown[] = [];
    const jsons: (string | undefined)[] = [];
    const sizes: number[] = [];
    for (let i = 0; i < payloads.length; i++) {
      values.push(this.pub.parse(t, payloads[i], i, extra));
      jsons.push(this.pub.parsedJson);
      sizes.push(this.pub.parsedSize);
    }
    const partitions = t.partitions;
    const events = values.map((v, i) => {
      const key = typeof keyOpt === 'function' ? checkedKey(keyOpt(payloads[i], i), i) : keyOpt;
      return this.pub.make(t, v, jsons[i], meta, key, partitions);
    });
    if (events.length === 0) return Promise.resolve([]);
    return this.schedule(t, events, sizes, dueAt).then(() => events.map((e) => e.id));
  }

  /** `bus.cancelScheduled`: removes the scheduled event `id` of `type` not yet due; true when it did. */
  cancel(type: string, id: unknown): Promise<boolean> {
    if (typeof id !== 'string' || id.length === 0) {
      return Promise.reject(new ConfigError('cancelScheduled: id must be the non-empty id a delayed publish resolved with.', [{ path: ['id'], message: 'must be a non-empty string' }]));
    }
    const s = this.transport.scheduling;
    if (s !== undefined) return s.cancel(type, id).catch(wrap);
    return Promise.resolve(this.local?.cancel(type, id) ?? false);
  }

  /** Drops what the in-process schedule holds (the bus closes); a transport's schedule is its own. */
  close(): void {
    (this.local ??= new DueQueue<Held>((e) => this.release(e))).close();
  }

  private schedule(t: TypeState, events: readonly OutgoingEvent[], sizes: readonly number[], dueAt: number): Promise<void> {
    const s = this.transport.scheduling;
    if (s !== undefined) return s.schedule(events, dueAt).catch(wrap);
    const q = (this.local ??= new DueQueue<Held>((e) => this.release(e)));
    for (let i = 0; i < events.length; i++) q.add(t.name, events[i]!.id, { t, event: events[i]!, size: sizes[i]! }, dueAt);
    return Promise.resolve();
  }

  /** A due event of the in-process schedule, published as any event; a failed write is logged (its publish resolved long ago). */
  private release(entry: DueEntry<Held>): void {
    const { t, event, size } = entry.item;
    this.pub.batcher.add(t.lanes[event.partition]!, event, size).catch((err: unknown) => {
      this.logger.error({ err, type: t.name, id: event.id }, 'a delayed event came due and could not be published');
    });
  }
}

function wrap(err: unknown): never {
  if (err instanceof EventlaneError) throw err;
  throw new TransportError(`delayed delivery: ${err instanceof Error ? err.message : String(err)}`, { cause: err });
}
