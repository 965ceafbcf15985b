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

export class Publisher {
  private readonly types = new Map<string, TypeInfo>();
  private next = 0;
  private readonly encoder = new BatchEncoder();

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

  async write(units: readonly PublishUnit[]): Promise<WriteResult> {
    const client = this.pool[this.next]!;
    this.next = (this.next + 1) % this.pool.length;
    const now = Date.now();
    const perEvent = this.config.entryMode === 'event';
    // Commands per unit, so each pipeline reply maps back to its unit.
    const counts = new Array<number>(units.length);
    const cluster = this.connector.isCluster;
    const pipe: ChainableCommander | undefined = cluster ? undefined : client.pipeline();
    const promises: Promise<unknown>[] | undefined = cluster ? [] : undefined;
    const send = (args: (string | number)[]): void => {
      if (pipe) (pipe as unknown as { xadd(...a: (string | number)[]): void }).xadd(...args);
      else promises!.push((client as unknown as { xadd(...a: (string | number)[]): Promise<unknown> }).xadd(...args));
    };
    for (let u = 0; u < units.length; u++) {
      const unit = units[u]!;
      const t = this.info(unit.type);
      const minId = t.minIdAgeMs !== undefined ? String(Math.max(0, now - t.minIdAgeMs)) : undefined;
      if (!perEvent) {
        const args = this.xaddArgs(t, unit.partition, minId);
        this.encoder.push(args, unit.type, this.source, unit.events);
        send(args);
        counts[u] = 1;
      } else {
        const evs = unit.events;
        for (let i = 0; i < evs.length; i++) {
          const args = this.xaddArgs(t, unit.partition, minId);
          pushEventFields(args, evs[i]!, this.source);
          send(args);
        }
        counts[u] = evs.length;
      }
    }
    let replies: [Error | null, unknown][];
    try {
      if (pipe) {
        replies = ((await pipe.exec()) ?? []) as [Error | null, unknown][];
      } else {
        const settled = await Promise.allSettled(promises!);
        replies = settled.map((s) => (s.status === 'fulfilled' ? [null, s.value] : [s.reason as Error, undefined]));
      }
    } catch (err) {
      throw this.wrap(err);
    }
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
