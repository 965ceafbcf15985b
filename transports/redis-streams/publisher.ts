/**
 * Publishing: each publish unit (events of one type and partition) becomes one batch entry (or one
 * entry per event in `entryMode: 'event'`). Each partition of a type is bound to one connection of a small
 * pool (so a key's entries keep their order); a write's entries go out pipelined, one pipeline per
 * connection it touches. Pool connections never run blocking reads. With `waitForReplicas` a
 * WAIT follows the entries on their connection (replica-wait.ts), and the write succeeds only if enough replicas have them.
 * A write that cannot go out at once waits for its partitions' turns (partition-turns.ts).
 */
import type { Command } from 'ioredis';
import { ConnectionError, EventlaneError, TransportError } from '../../src/errors.js';
import type { OutgoingEvent, PublishUnit, WriteResult, WriteSettlement } from '../../src/transport.js';
import type { JsonWriter } from '../../src/json-writer.js';
import { BatchEncoder, pushEventFields, type Encode } from './codec.js';
import type { ResolvedConfig } from './config.js';
import { isConnectionProblem, neverApplied, type Client, type Connector } from './connection.js';
import { streamKey } from './keys.js';
import type { ServerClock } from './server-clock.js';
import { ReplicaWait, type Reply, type StreamInfo } from './replica-wait.js';
import { UnitReplies } from './unit-replies.js';
import { writePerMaster } from './cluster-parts.js';
import { PartitionTurns } from './partition-turns.js';
import { Pipelines } from './pipelines.js';
import { SLOW_WRITE_MS, WriteTimers } from './write-timers.js';
import { WriteWaits } from './write-waits.js';
import { isWireCommand, rawCommand, send, slotOf, wireCommand, type WireArg } from './wire-command.js';

interface TypeInfo extends StreamInfo {
  /** `[key]` per partition: all ioredis needs to see of an XADD (the slot, in a cluster). */
  routes: string[][];
  /** `MAXLEN ~ n` / `MINID ~` args, or undefined for no trimming; MINID is computed per write. */
  trim: (string | number)[] | undefined;
  minIdAgeMs: number | undefined;
  /** Per partition: the turn of the last write waiting for its partitions (partition-turns.ts), while one is. */
  held: (Promise<void> | undefined)[];
}

function noResult(): WriteResult {
  return undefined;
}

export class Publisher {
  private readonly types = new Map<string, TypeInfo>();
  private readonly encoder = new BatchEncoder();
  /** `waitForReplicas`'s WAITs (see replica-wait.ts). */
  private readonly replicas: ReplicaWait;
  private readonly turns: PartitionTurns;
  private readonly timers: WriteTimers;

  constructor(
    private readonly config: ResolvedConfig,
    private readonly connector: Connector,
    private readonly pool: Client[],
    private readonly source: string,
    /** Redis's clock: MINID is in server time (server-clock.ts). */
    private readonly clock: ServerClock,
    /** A type's partition count (topic-counts.ts); a raise is passed on with `grow`. */
    private readonly partitionsFor: (type: string) => number,
    /** The bus's encoder for a type's payloads (events arrive unencoded: encoding is done here, per write). */
    private readonly serializer: (type: string) => Encode,
    /** The bus's compiled JSON byte writer for a type's payloads, where the schema allows one. */
    private readonly writer: (type: string) => JsonWriter | undefined = () => undefined,
  ) {
    this.replicas = new ReplicaWait(config, connector, pool, (type) => this.info(type));
    this.turns = new PartitionTurns({
      config,
      address: connector.address,
      clientOf: (unit) => this.pool[this.info(unit.type).conns[unit.partition]!]!,
      heldOf: (type) => this.info(type).held,
      unreadyMasters: (units) => this.replicas.unreadyMasters(units, PartitionTurns.notWritable),
    });
    const wfr = config.waitForReplicas !== undefined;
    this.timers = new WriteTimers({
      // A write's commands may wait behind one WAIT out on their connection, then for their own.
      replyMs: config.commandTimeoutMs + (config.waitForReplicas?.timeoutMs ?? 0),
      replySetting: wfr ? 'transport.commandTimeoutMs + waitForReplicas.timeoutMs' : 'transport.commandTimeoutMs',
      everyMs: Math.max(5, Math.min(connector.isCluster ? SLOW_WRITE_MS / 2 : 500, config.commandTimeoutMs / 4)),
      address: connector.address,
      wrap: (err) => this.wrap(err),
    });
    // (A Cluster's node connections do not reconnect: ioredis rejects their commands and retries them itself.)
    if (!connector.isCluster) for (const client of pool) client.on('close', () => Publisher.dropped(client));
  }

  /**
   * A publish connection closed: ioredis forgets the commands it had sent without a reply (not resending
   * them: autoResendUnfulfilledCommands is off) and never settles them, so their writes would wait for
   * commandTimeoutMs, holding their batcher slots while Redis may well be back. Reject them now, one by one,
   * so a write spread over connections fails only for the units it had on this one.
   */
  private static dropped(client: Client): void {
    // 'close' is emitted on the next tick: the queue is still the closed socket's unless a new one is up.
    if (client.status === 'ready') return;
    const queue = (client as unknown as { commandQueue?: { length: number; peekAt(i: number): { command: Command } | undefined } }).commandQueue;
    if (queue === undefined) return;
    const err = new Error('Connection is closed before Redis replied: the write may or may not have been applied');
    // Only ours (XADD, WAIT): ioredis's own handshake commands are left to ioredis.
    for (let i = 0; i < queue.length; i++) {
      const cmd = queue.peekAt(i)?.command;
      if (cmd !== undefined && isWireCommand(cmd)) cmd.reject(err);
    }
  }

  /** The type's count was raised to `partitions`: its new partition streams, each bound to a pool connection. */
  grow(type: string, partitions: number): void {
    const t = this.types.get(type);
    if (t === undefined) return; // built with the count in use at its first write
    const base = t.conns[0]!;
    for (let p = t.keys.length; p < partitions; p++) {
      const key = streamKey(this.config.prefix, type, p);
      t.keys.push(key);
      t.routes.push([key]);
      t.conns.push((base + p) % this.pool.length);
      if (this.connector.isCluster) t.slots.push(slotOf(key));
      t.held.push(undefined);
    }
  }

  private info(type: string): TypeInfo {
    let t = this.types.get(type);
    if (t === undefined) {
      const topic = this.config.topics[type];
      const n = this.partitionsFor(type);
      const minIdAgeMs = topic?.minIdAgeMs ?? (topic?.maxLen === undefined ? this.config.minIdAgeMs : undefined);
      const maxLen = topic?.maxLen ?? this.config.maxLen;
      const base = this.types.size;
      const keys = Array.from({ length: n }, (_, p) => streamKey(this.config.prefix, type, p));
      t = {
        keys,
        routes: keys.map((k) => [k]),
        conns: Array.from({ length: n }, (_, p) => (base + p) % this.pool.length),
        slots: this.connector.isCluster ? keys.map(slotOf) : [],
        trim: minIdAgeMs !== undefined ? undefined : maxLen > 0 ? ['MAXLEN', '~', String(maxLen)] : undefined,
        minIdAgeMs,
        held: new Array<Promise<void> | undefined>(n).fill(undefined),
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

  /**
   * Outside a Cluster, the write settles every unit with its result. In a Cluster, each master's part reports
   * its units through `settle` as it settles, and a part out long reports the write stalled (`writePart`).
   */
  write(units: readonly PublishUnit[], settle: WriteSettlement): Promise<WriteResult> {
    if (!this.connector.isCluster) return this.turns.sendable(units) ? this.send(units) : this.turns.queued(units, () => this.send(units));
    return writePerMaster(
      units,
      (unit) => this.masterOf(unit),
      (part) => this.writePart(part, settle),
      settle,
    );
  }

  /** Cluster: the master of a unit's slot, as its pool client's slot map says now (undefined: none known). */
  private masterOf(unit: PublishUnit): string | undefined {
    const t = this.info(unit.type);
    return this.replicas.nodeOf(this.pool[t.conns[unit.partition]!]!, t, unit.partition);
  }

  /**
   * Cluster: one master's part of a write (cluster-parts.ts), with its own turns and deadline. A part out
   * SLOW_WRITE_MS reports the whole write stalled (`settle.stalled`): a part that waits on its master (a
   * failover) must not hold back writes to the others.
   */
  private writePart(units: readonly PublishUnit[], settle: WriteSettlement): Promise<WriteResult> {
    // Each unit's own commands, once sent (a unit that has its replies does not hold its partition's turn).
    const unitReplies = new UnitReplies();
    const p = this.turns.sendable(units) ? this.send(units, unitReplies) : this.turns.queued(units, () => this.send(units, unitReplies));
    this.timers.watchSlow(Date.now(), p, () => {
      // Held first: a stalled write's slot goes at once to the batches waiting for one, and one of them may go
      // to the same partitions.
      this.holdOnceSlow(units, p, unitReplies);
      settle.stalled();
    });
    return p;
  }

  /**
   * A part is out long (its write stalled): it holds its partitions (PartitionTurns.hold) once it has been *sent*
   * SLOW_WRITE_MS ago. While it waits in `queued`, its turn there keeps every later write to its partitions
   * behind it, and its time there is no sign of a master in failover: holding from then on would put it behind
   * the writes queued after it, and make those wait for its replies, a WAIT each with `waitForReplicas`.
   */
  private holdOnceSlow(units: readonly PublishUnit[], write: Promise<WriteResult>, unitReplies: UnitReplies): void {
    const hold = (): void => this.turns.hold(units, write, unitReplies.settled);
    const sentAt = unitReplies.sentAt;
    if (sentAt === undefined) void unitReplies.whenSent.then(() => this.timers.watchSlow(unitReplies.sentAt!, write, hold));
    else if (Date.now() - sentAt >= SLOW_WRITE_MS) hold();
    else this.timers.watchSlow(sentAt, write, hold);
  }

  /**
   * Sends the write now (its connections are up). `unitReplies` (Cluster) receives, per unit, a promise of
   * its XADDs' replies.
   */
  private send(units: readonly PublishUnit[], unitReplies?: UnitReplies): Promise<WriteResult> {
    if (units.length === 1) {
      const unit = units[0]!;
      const t = this.info(unit.type);
      return this.sendOne(this.pool[t.conns[unit.partition]!]!, t, unit, unitReplies);
    }
    return this.sendMany(units, unitReplies);
  }

  private minId(t: TypeInfo, now: number): string | undefined {
    return t.minIdAgeMs !== undefined ? String(Math.max(0, this.clock.now(now) - t.minIdAgeMs)) : undefined;
  }

  /** The common shapes (one lane per write; an awaited single publish). */
  private sendOne(client: Client, t: TypeInfo, unit: PublishUnit, unitReplies?: UnitReplies): Promise<WriteResult> {
    const args: WireArg[] = this.xaddArgs(t, unit.partition, this.minId(t, Date.now()));
    if (countOf(unit) === 1) {
      // A unit of one event is written as a per-event entry (smaller, and readable by anyone).
      pushEventFields(args as (string | number)[], eventsOf(unit)[0]!, this.source, this.serializer(unit.type));
      return this.timers.bounded(this.replicated(client, t, unit.partition, wireCommand('xadd', args, t.routes[unit.partition]!), unitReplies), noResult);
    }
    if (this.config.entryMode === 'batch') {
      const cmd = rawCommand('xadd', this.batchRequest(args, unit), t.routes[unit.partition]!);
      unit.release?.(); // encoded: the events need not live until Redis replies
      return this.timers.bounded(this.replicated(client, t, unit.partition, cmd, unitReplies), noResult);
    }
    return this.sendMany([unit], unitReplies);
  }

  /** The XADD of a batch entry of the unit's events (`args`: key, trimming, `*`), as RESP bytes. */
  private batchRequest(args: readonly WireArg[], unit: PublishUnit): Buffer {
    const serialize = this.serializer(unit.type);
    const writer = this.writer(unit.type);
    const run = unit.run;
    return run !== undefined
      ? this.encoder.requestRun(args, unit.type, this.source, run, unit.bytes, serialize, writer)
      : this.encoder.request(args, unit.type, this.source, unit.events, unit.bytes, serialize, writer);
  }

  /** Sends `cmd`: settles with its reply; with `waitForReplicas`, once enough replicas have it (see ReplicaWait.after). */
  private replicated(client: Client, t: TypeInfo, partition: number, cmd: Command, unitReplies?: UnitReplies): Promise<unknown> {
    const write = send(client, cmd);
    unitReplies?.sent(0, [write]); // the XADD's reply (not its WAIT's)
    if (this.config.waitForReplicas === undefined) return write;
    return this.replicas.after(client, t, partition, write, cmd);
  }

  /** Several lanes (or per-event entries): each command on its lane's connection, pipelined per connection. */
  private sendMany(units: readonly PublishUnit[], unitReplies?: UnitReplies): Promise<WriteResult> {
    const now = Date.now();
    const cluster = this.connector.isCluster;
    const wire = new Pipelines(cluster);
    // Commands per unit, so each reply maps back to its unit.
    const counts = new Array<number>(units.length);
    const wfr = this.config.waitForReplicas;
    const waits = wfr === undefined ? undefined : new WriteWaits(units, this.replicas, cluster);
    for (let u = 0; u < units.length; u++) {
      const unit = units[u]!;
      const t = this.info(unit.type);
      const client = this.pool[t.conns[unit.partition]!]!;
      const firstReply = wire.direct.length;
      counts[u] = this.issueUnit(wire, client, t, unit, now, waits?.commandsOf(u));
      if (cluster) unitReplies?.sent(u, wire.direct.slice(firstReply));
      unit.release?.();
      waits?.unitSent(wire, u, client, t, t.conns[unit.partition]!);
    }
    waits?.place(wire, wfr!.count, wfr!.timeoutMs);
    const all = wire.replies().then(async (reply) => ({
      writes: wire.places.map(reply),
      waits: waits === undefined ? undefined : await waits.replies(reply),
    }));
    return this.timers.bounded(all, (res) => this.results(units, counts, res.writes, res.waits));
  }

  /**
   * Issues a unit's XADDs on `client` (one batch entry, or one per event in `entryMode: 'event'`), noting
   * them in `cmds` when given: how many.
   */
  private issueUnit(wire: Pipelines, client: Client, t: TypeInfo, unit: PublishUnit, now: number, cmds?: Command[]): number {
    const issue = (cmd: Command): void => {
      cmds?.push(cmd);
      wire.issue(client, cmd);
    };
    const minId = this.minId(t, now);
    const serialize = this.serializer(unit.type);
    const route = t.routes[unit.partition]!;
    const n = countOf(unit);
    if (this.config.entryMode !== 'event' || n === 1) {
      const args: WireArg[] = this.xaddArgs(t, unit.partition, minId);
      if (n === 1) {
        pushEventFields(args as (string | number)[], eventsOf(unit)[0]!, this.source, serialize);
        issue(wireCommand('xadd', args, route));
      } else issue(rawCommand('xadd', this.batchRequest(args, unit), route));
      return 1;
    }
    const evs = eventsOf(unit);
    for (let i = 0; i < evs.length; i++) {
      const args = this.xaddArgs(t, unit.partition, minId);
      pushEventFields(args, evs[i]!, this.source, serialize);
      issue(wireCommand('xadd', args, route));
    }
    return evs.length;
  }

  /** Writes not sent yet reject with ClosedError (nothing of them was written). */
  close(): void {
    this.timers.close();
    this.turns.close();
  }

  /**
   * Per unit: the first failed write of its commands, else (with `waitForReplicas`) a WAIT that failed or
   * fell short.
   */
  private results(units: readonly PublishUnit[], counts: number[], replies: Reply[], waits?: Reply[]): WriteResult {
    let failed: (Error | undefined)[] | undefined;
    let r = 0;
    for (let u = 0; u < units.length; u++) {
      let err: Error | undefined;
      for (let k = 0; k < counts[u]!; k++) {
        const e = replies[r++]?.[0];
        if (e && err === undefined) err = this.wrap(e);
      }
      const w = waits?.[u];
      if (err === undefined && w !== undefined) err = w[0] ? this.wrap(w[0]) : this.replicas.shortfall(Number(w[1]));
      if (err !== undefined) {
        failed ??= new Array<Error | undefined>(units.length).fill(undefined);
        failed[u] = err;
      }
    }
    return failed;
  }

  /** A command's failure as the publish reports it: an EventlaneError (a WAIT's ConnectionError) as it is. */
  private wrap(err: unknown): Error {
    if (err instanceof EventlaneError) return err;
    const msg = err instanceof Error ? err.message : String(err);
    if (isConnectionProblem(err)) {
      const outcome = neverApplied(err) ? 'nothing was written' : 'it may or may not have been applied';
      return new ConnectionError(`Write to ${this.connector.address} failed: ${msg}; ${outcome} (bounded by transport.commandTimeoutMs)`, { cause: err });
    }
    return new TransportError(`XADD to ${this.connector.address} failed: ${msg}`, { cause: err });
  }
}

/** Events a unit carries (a run's built on demand). */
function countOf(unit: PublishUnit): number {
  return unit.run !== undefined ? unit.run.count : unit.events.length;
}

function eventsOf(unit: PublishUnit): readonly OutgoingEvent[] {
  return unit.run !== undefined ? unit.run.events() : unit.events;
}
