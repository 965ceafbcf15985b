/**
 * Publishing: each publish unit (events of one type and partition) becomes one batch entry (or one
 * entry per event in `entryMode: 'event'`); all entries of a write go out in one pipeline on one
 * connection of a small pool. Pool connections never run blocking reads.
 */
import type { ChainableCommander } from 'ioredis';
import { ConnectionError, TransportError } from '../../src/errors.js';
import type { PublishUnit, WriteResult } from '../../src/transport.js';
import { BatchEncoder, pushEventFields } from './codec.js';
import type { ResolvedConfig } from './config.js';
import { isConnectionProblem, type Client, type Connector } from './connection.js';
import { streamKey } from './keys.js';

interface TypeInfo {
  keys: string[];
  /** `MAXLEN ~ n` / `MINID ~` args, or undefined for no trimming; MINID is computed per write. */
  trim: (string | number)[] | undefined;
  minIdAgeMs: number | undefined;
}

interface InFlight {
  deadline: number;
  reject: (err: Error) => void;
  done: boolean;
}

function noResult(): WriteResult {
  return undefined;
}

export class Publisher {
  private readonly types = new Map<string, TypeInfo>();
  private next = 0;
  private readonly encoder = new BatchEncoder();
  private readonly inflight = new Set<InFlight>();
  private sweeper: NodeJS.Timeout | undefined;

  constructor(
    private readonly config: ResolvedConfig,
    private readonly connector: Connector,
    private readonly pool: Client[],
    private readonly source: string,
  ) {}

  partitionsFor(type: string): number {
    return this.config.topics[type]?.partitions ?? this.config.partitions;
  }

  private info(type: string): TypeInfo {
    let t = this.types.get(type);
    if (t === undefined) {
      const topic = this.config.topics[type];
      const n = this.partitionsFor(type);
      const minIdAgeMs = topic?.minIdAgeMs ?? (topic?.maxLen === undefined ? this.config.minIdAgeMs : undefined);
      const maxLen = topic?.maxLen ?? this.config.maxLen;
      t = {
        keys: Array.from({ length: n }, (_, p) => streamKey(this.config.prefix, type, p)),
        trim: minIdAgeMs !== undefined ? undefined : maxLen > 0 ? ['MAXLEN', '~', maxLen] : undefined,
        minIdAgeMs,
      };
      this.types.set(type, t);
    }
    return t;
  }

  private xaddArgs(t: TypeInfo, partition: number, minId: string | undefined): (string | number)[] {
    const args: (string | number)[] = [t.keys[partition]!];
    if (minId !== undefined) args.push('MINID', '~', minId);
    else if (t.trim !== undefined) args.push(...t.trim);
    args.push('*');
    return args;
  }

  /** Resolves when `client` is ready; rejects with `ConnectionError` after commandTimeoutMs. */
  private waitReady(client: Client): Promise<void> {
    const ms = this.config.commandTimeoutMs;
    return new Promise<void>((resolve, reject) => {
      const onReady = (): void => {
        clearTimeout(timer);
        resolve();
      };
      const timer = setTimeout(() => {
        client.off('ready', onReady);
        reject(new ConnectionError(`Redis at ${this.connector.address} is unreachable: no connection within ${ms} ms (transport.commandTimeoutMs); nothing was written`));
      }, ms);
      client.once('ready', onReady);
    });
  }

  write(units: readonly PublishUnit[]): Promise<WriteResult> {
    const client = this.pool[this.next]!;
    this.next = (this.next + 1) % this.pool.length;
    // Not ready, or ready on paper while the socket already closed (a kill not yet noticed): wait for
    // the reconnect instead of failing at once — nothing has been sent yet.
    if (client.status !== 'ready' || (client as { stream?: { writable: boolean } }).stream?.writable === false) {
      return this.waitReady(client).then(() => this.send(client, units));
    }
    return this.send(client, units);
  }

  private send(client: Client, units: readonly PublishUnit[]): Promise<WriteResult> {
    const now = Date.now();
    const perEvent = this.config.entryMode === 'event';
    const c = client as unknown as { xadd(...a: unknown[]): Promise<unknown>; pipeline(): ChainableCommander };
    if (units.length === 1 && (!perEvent || units[0]!.events.length === 1)) {
      // The common shapes (one lane per write; an awaited single publish): one XADD, no pipeline.
      const unit = units[0]!;
      const t = this.info(unit.type);
      const args = this.xaddArgs(t, unit.partition, t.minIdAgeMs !== undefined ? String(Math.max(0, now - t.minIdAgeMs)) : undefined);
      // A unit of one event is written as a per-event entry (smaller, and readable by anyone).
      if (unit.events.length === 1) pushEventFields(args, unit.events[0]!, this.source);
      else this.encoder.push(args, unit.type, this.source, unit.events, unit.bytes);
      return this.bounded(c.xadd(...args).then(noResult));
    }
    const replies: Promise<unknown>[] = [];
    // Commands per unit, so each reply maps back to its unit.
    const counts = new Array<number>(units.length);
    let pipe: ChainableCommander | undefined;
    if (perEvent && !this.connector.isCluster) pipe = c.pipeline();
    for (let u = 0; u < units.length; u++) {
      const unit = units[u]!;
      const t = this.info(unit.type);
      const minId = t.minIdAgeMs !== undefined ? String(Math.max(0, now - t.minIdAgeMs)) : undefined;
      if (!perEvent) {
        const args: unknown[] = this.xaddArgs(t, unit.partition, minId);
        if (unit.events.length === 1) pushEventFields(args as (string | number)[], unit.events[0]!, this.source);
        else this.encoder.push(args, unit.type, this.source, unit.events, unit.bytes);
        replies.push(c.xadd(...args));
        counts[u] = 1;
      } else {
        const evs = unit.events;
        for (let i = 0; i < evs.length; i++) {
          const args = this.xaddArgs(t, unit.partition, minId);
          pushEventFields(args, evs[i]!, this.source);
          if (pipe) (pipe as unknown as { xadd(...a: unknown[]): void }).xadd(...args);
          else replies.push(c.xadd(...args));
        }
        counts[u] = evs.length;
      }
    }
    const all: Promise<[Error | null, unknown][]> = pipe
      ? pipe.exec().then((r) => (r ?? []) as [Error | null, unknown][])
      : Promise.allSettled(replies).then((settled) => settled.map((s) => (s.status === 'fulfilled' ? [null, s.value] : [s.reason as Error, undefined])));
    return this.bounded(all.then((res) => this.results(units, counts, res)));
  }

  /**
   * Bounds a write by commandTimeoutMs without a timer per write: writes in flight sit in a set that
   * one interval timer sweeps.
   */
  private bounded(p: Promise<WriteResult>): Promise<WriteResult> {
    return new Promise<WriteResult>((resolve, reject) => {
      const w: InFlight = { deadline: Date.now() + this.config.commandTimeoutMs, reject, done: false };
      this.inflight.add(w);
      if (this.sweeper === undefined) {
        this.sweeper = setInterval(() => this.sweep(), Math.max(5, Math.min(500, this.config.commandTimeoutMs / 4)));
        this.sweeper.unref();
      }
      p.then(
        (res) => {
          if (w.done) return;
          w.done = true;
          this.inflight.delete(w);
          resolve(res);
        },
        (err: unknown) => {
          if (w.done) return;
          w.done = true;
          this.inflight.delete(w);
          reject(err instanceof ConnectionError ? err : this.wrap(err));
        },
      );
    });
  }

  private sweep(): void {
    if (this.inflight.size === 0) {
      clearInterval(this.sweeper);
      this.sweeper = undefined;
      return;
    }
    const now = Date.now();
    const ms = this.config.commandTimeoutMs;
    for (const w of this.inflight) {
      if (w.deadline > now) continue;
      w.done = true;
      this.inflight.delete(w);
      w.reject(new ConnectionError(`Write to ${this.connector.address} got no reply within ${ms} ms (transport.commandTimeoutMs); it may or may not have been applied`));
    }
  }

  close(): void {
    clearInterval(this.sweeper);
    this.sweeper = undefined;
  }

  private results(units: readonly PublishUnit[], counts: number[], replies: [Error | null, unknown][]): WriteResult {
    let failed: (Error | undefined)[] | undefined;
    let r = 0;
    for (let u = 0; u < units.length; u++) {
      let err: Error | undefined;
      for (let k = 0; k < counts[u]!; k++) {
        const e = replies[r++]?.[0];
        if (e && err === undefined) err = e;
      }
      if (err !== undefined) {
        failed ??= new Array<Error | undefined>(units.length).fill(undefined);
        failed[u] = this.wrap(err);
      }
    }
    return failed;
  }

  private wrap(err: unknown): Error {
    const msg = err instanceof Error ? err.message : String(err);
    if (isConnectionProblem(err)) {
      return new ConnectionError(`Write to ${this.connector.address} failed: ${msg} (bounded by transport.commandTimeoutMs)`, { cause: err });
    }
    return new TransportError(`XADD to ${this.connector.address} failed: ${msg}`, { cause: err });
  }
}
