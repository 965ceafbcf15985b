/**
 * Publishing: each publish unit (events of one type and partition) becomes one batch entry (or one
 * entry per event in `entryMode: 'event'`). Each partition of a type is bound to one connection of a small
 * pool (so a key's entries keep their order); a write's entries go out pipelined, one pipeline per
 * connection it touches. Pool connections never run blocking reads. With `waitForReplicas` a
 * WAIT follows the entries on their connection (replica-wait.ts), and the write succeeds only if enough replicas have them.
 */
import type { ChainableCommander, Command } from 'ioredis';
import { ClosedError, ConnectionError, EventlaneError, TransportError } from '../../src/errors.js';
import type { OutgoingEvent, PublishUnit, WriteResult } from '../../src/transport.js';
import type { JsonWriter } from '../../src/json-writer.js';
import { BatchEncoder, pushEventFields, type Encode } from './codec.js';
import type { ResolvedConfig } from './config.js';
import { isConnectionProblem, neverApplied, type Client, type Connector } from './connection.js';
import { streamKey } from './keys.js';
import type { ServerClock } from './server-clock.js';
import { addTo, ReplicaWait, type Reply, type StreamInfo } from './replica-wait.js';
import { UnitReplies } from './unit-replies.js';
import { writePerMaster } from './cluster-parts.js';
import { isWireCommand, queue, rawCommand, send, slotOf, waitCommand, wireCommand, type WireArg } from './wire-command.js';

interface TypeInfo extends StreamInfo {
  /** `[key]` per partition: all ioredis needs to see of an XADD (the slot, in a cluster). */
  routes: string[][];
  /** `MAXLEN ~ n` / `MINID ~` args, or undefined for no trimming; MINID is computed per write. */
  trim: (string | number)[] | undefined;
  minIdAgeMs: number | undefined;
  /** Per partition: the turn of the last write waiting for connections (see `queued`), while one is. */
  held: (Promise<void> | undefined)[];
}

interface InFlight {
  deadline: number;
  reject: (err: Error) => void;
  done: boolean;
}

/**
 * Cluster: a write still out after this long frees its batcher slot (Transport.write's `freeSlot`). A
 * healthy write takes a few ms; one to a master in failover waits seconds (ioredis retries it until a replica
 * takes the slot over), and holding its slot made writes to the other masters queue behind it.
 */
const SLOW_WRITE_MS = 200;

interface SlowWatch {
  at: number;
  free: () => void;
}

function noResult(): WriteResult {
  return undefined;
}

export class Publisher {
  private readonly types = new Map<string, TypeInfo>();
  private readonly encoder = new BatchEncoder();
  private readonly inflight = new Set<InFlight>();
  /** Cluster: writes out whose slot is not freed yet (see SLOW_WRITE_MS). */
  private readonly slow = new Set<SlowWatch>();
  private sweeper: NodeJS.Timeout | undefined;
  /** `waitForReplicas`'s WAITs (see replica-wait.ts). */
  private readonly replicas: ReplicaWait;
  /**
   * How long a write sent waits for its replies: commandTimeoutMs, plus the WAIT timeout with
   * `waitForReplicas` (a write's commands may wait behind one WAIT out on their connection, then for their own).
   */
  private readonly replyMs: number;

  constructor(
    private readonly config: ResolvedConfig,
    private readonly connector: Connector,
    private readonly pool: Client[],
    private readonly source: string,
    /** Redis's clock: MINID is in server time (server-clock.ts). */
    private readonly clock: ServerClock,
    /** The bus's encoder for a type's payloads (events arrive unencoded: encoding is done here, per write). */
    private readonly serializer: (type: string) => Encode,
    /** The bus's compiled JSON byte writer for a type's payloads, where the schema allows one. */
    private readonly writer: (type: string) => JsonWriter | undefined = () => undefined,
  ) {
    this.replicas = new ReplicaWait(config, connector, pool, (type) => this.info(type));
    this.replyMs = config.commandTimeoutMs + (config.waitForReplicas?.timeoutMs ?? 0);
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
   * True once `client` is ready, false after `ms` without. The writes waiting for one client share a single
   * 'ready' listener (an outage can hold hundreds of them).
   */
  private readyWithin(client: Client, ms: number): Promise<boolean> {
    return new Promise<boolean>((resolve) => {
      let waiters = this.readyWaiters.get(client);
      if (waiters === undefined) {
        const set = new Set<() => void>();
        waiters = set;
        this.readyWaiters.set(client, set);
        client.once('ready', () => {
          this.readyWaiters.delete(client);
          for (const w of set) w();
        });
      }
      const onReady = (): void => {
        clearTimeout(timer);
        resolve(true);
      };
      const timer = setTimeout(() => {
        waiters.delete(onReady);
        resolve(false);
      }, ms);
      waiters.add(onReady);
    });
  }

  /** Writes waiting for each client's next 'ready'. */
  private readonly readyWaiters = new Map<Client, Set<() => void>>();
  /** Writes that hold partitions (`queued`, `holdPartitions`) and have not ended their turns yet. */
  private held = 0;
  /** Writes in `queued` not sent yet: each one's rejection (see `beforeDeadline`). */
  private readonly unsent = new Set<(err: unknown) => void>();

  private static notWritable(client: Client): boolean {
    // Not ready, or ready on paper while the socket already closed (a kill not yet noticed).
    return client.status !== 'ready' || (client as { stream?: { writable: boolean } }).stream?.writable === false;
  }

  write(units: readonly PublishUnit[], freeSlot?: () => void, unitWritten?: (index: number) => void): Promise<WriteResult> {
    if (!this.connector.isCluster) return this.held === 0 && !this.mustWait(units) ? this.send(units) : this.queued(units);
    return writePerMaster(units, (unit) => this.masterOf(unit), (part) => this.writePart(part, freeSlot), unitWritten);
  }

  /** Cluster: the master of a unit's slot, as its pool client's slot map says now (undefined: none known). */
  private masterOf(unit: PublishUnit): string | undefined {
    const t = this.info(unit.type);
    return this.replicas.nodeOf(this.pool[t.conns[unit.partition]!]!, t, unit.partition);
  }

  /** Cluster: one master's part of a write (cluster-parts.ts), with its own turns and deadline. */
  private writePart(units: readonly PublishUnit[], freeSlot?: () => void): Promise<WriteResult> {
    // Each unit's own commands, once sent (a unit that has its replies does not hold its partition's turn).
    const unitReplies = freeSlot !== undefined ? new UnitReplies() : undefined;
    const p = this.held === 0 && !this.mustWait(units) ? this.send(units, unitReplies) : this.queued(units, unitReplies);
    if (unitReplies === undefined) return p;
    // A part that waits on its master (a failover) must not hold back writes to the others.
    this.watchSlow(Date.now(), p, () => {
      // Held first: freeing the slot sends the batches waiting for one at once, and one of them may go
      // to the same partitions.
      this.holdOnceSlow(units, p, unitReplies);
      freeSlot!();
    });
    return p;
  }

  /** Runs `slow` once `write` has been out SLOW_WRITE_MS from `from`, unless it settled before. */
  private watchSlow(from: number, write: Promise<unknown>, slow: () => void): void {
    const w: SlowWatch = { at: from + SLOW_WRITE_MS, free: slow };
    this.slow.add(w);
    this.startSweeper();
    const done = (): void => void this.slow.delete(w);
    write.then(done, done);
  }

  /**
   * A part's slot is freed: it holds its partitions (`holdPartitions`) once it has been *sent* SLOW_WRITE_MS
   * ago. While it waits in `queued`, its turn there keeps every later write to its partitions behind it, and
   * its time there is no sign of a master in failover: holding from then on would put it behind the writes
   * queued after it, and make those wait for its replies, a WAIT each with `waitForReplicas`.
   */
  private holdOnceSlow(units: readonly PublishUnit[], write: Promise<WriteResult>, unitReplies: UnitReplies): void {
    const hold = (): void => this.holdPartitions(units, write, unitReplies);
    const sentAt = unitReplies.sentAt;
    if (sentAt === undefined) void unitReplies.whenSent.then(() => this.watchSlow(unitReplies.sentAt!, write, hold));
    else if (Date.now() - sentAt >= SLOW_WRITE_MS) hold();
    else this.watchSlow(sentAt, write, hold);
  }

  /**
   * Whether a unit's connection is down (or, with waitForReplicas in a Cluster, a master's connection a WAIT
   * needs): the write waits for it instead of failing at once, since nothing has been sent yet.
   */
  private mustWait(units: readonly PublishUnit[]): boolean {
    for (const unit of units) if (Publisher.notWritable(this.pool[this.info(unit.type).conns[unit.partition]!]!)) return true;
    return this.config.waitForReplicas !== undefined && this.replicas.unreadyMasters(units, Publisher.notWritable) !== undefined;
  }

  /**
   * A write that waits for connections, and every later write to one of its partitions, take their turn:
   * one sent at once could overtake it on a partition whose connection is up while another of its
   * partitions' is not, and a key's events would be stored out of order. The write is sent within
   * commandTimeoutMs from here, the time behind earlier writes included, or rejects with nothing written
   * (ClosedError once the publisher closes). Its turn ends when it is sent, or, when it never is, once the
   * writes before it are through: a later write must not overtake those either.
   */
  private queued(units: readonly PublishUnit[], unitReplies?: UnitReplies): Promise<WriteResult> {
    const deadline = Date.now() + this.config.commandTimeoutMs;
    const before: Promise<void>[] = [];
    let turnOver!: () => void;
    const turn = new Promise<void>((resolve) => (turnOver = resolve));
    for (const unit of units) {
      const held = this.info(unit.type).held;
      const prev = held[unit.partition];
      if (prev !== undefined && prev !== turn) before.push(prev);
      held[unit.partition] = turn;
    }
    this.held++;
    const prior = Promise.all(before);
    const sent = this.beforeDeadline(
      prior.then(() => this.whenWritable(units, deadline)),
      deadline,
    ).then(() => ({ result: this.send(units, unitReplies) }));
    const over = (): void => {
      this.endTurns(units, () => turn);
      turnOver();
    };
    sent.then(over, () => prior.then(over));
    return sent.then((s) => s.result);
  }

  /**
   * `ready`, or a rejection with nothing written: ConnectionError at `deadline` (earlier writes to the same
   * partitions still out, or a connection still down), ClosedError once the publisher closes.
   */
  private beforeDeadline(ready: Promise<void>, deadline: number): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      const stop = (err: unknown): void => {
        clearTimeout(timer);
        this.unsent.delete(stop);
        reject(err);
      };
      const ms = this.config.commandTimeoutMs;
      const timer = setTimeout(
        () => stop(new ConnectionError(`Write to ${this.connector.address} not sent within ${ms} ms (transport.commandTimeoutMs): earlier writes to its partitions are still out, or a connection is down; nothing was written`)),
        Math.max(0, deadline - Date.now()),
      );
      this.unsent.add(stop);
      ready.then(() => {
        clearTimeout(timer);
        this.unsent.delete(stop);
        resolve();
      }, stop);
    });
  }

  /**
   * A write whose slot was freed, out SLOW_WRITE_MS since it was sent, still has its partitions' turn until
   * it settles (`holdOnceSlow`): ioredis retries its commands after a failover, and a later write to one of
   * those partitions sent meanwhile could reach the new master first and store a key's events out of order. Later writes to them wait (`queued`); writes
   * to other partitions go on. A unit's turn ends when its own commands have their replies
   * (`unitReplies.settled[u]`), or when the write settles (its own, or commandTimeoutMs: a master that stopped
   * answering without closing its socket never replies, and the turn must not outlive the write).
   */
  private holdPartitions(units: readonly PublishUnit[], write: Promise<unknown>, unitReplies: UnitReplies): void {
    const over = (): void => undefined;
    const turns: Promise<void>[] = [];
    for (let u = 0; u < units.length; u++) {
      const unit = units[u]!;
      const own = unitReplies.settled[u];
      const settled = (own === undefined ? write : Promise.race([own, write])).then(over, over);
      const held = this.info(unit.type).held;
      const prev = held[unit.partition];
      // After a turn it joined, if one is still open (a later write queued behind this one keeps its place).
      const turn = prev === undefined ? settled : Promise.all([prev, settled]).then(over);
      held[unit.partition] = turn;
      turns.push(turn);
    }
    this.held++;
    void Promise.all(turns).then(() => this.endTurns(units, (u) => turns[u]!));
  }

  /** A write's turns are over: one write fewer holds partitions, and each unit's partition is free unless a later write took its turn. */
  private endTurns(units: readonly PublishUnit[], turnOf: (u: number) => Promise<void>): void {
    this.held--;
    for (let u = 0; u < units.length; u++) {
      const held = this.info(units[u]!.type).held;
      if (held[units[u]!.partition] === turnOf(u)) held[units[u]!.partition] = undefined;
    }
  }

  /** Resolves once every connection `units` need is up; rejects with ConnectionError at `deadline`. */
  private async whenWritable(units: readonly PublishUnit[], deadline: number): Promise<void> {
    const ms = this.config.commandTimeoutMs;
    for (;;) {
      const down = units.map((u) => this.pool[this.info(u.type).conns[u.partition]!]!).find(Publisher.notWritable);
      if (down !== undefined) {
        if (!(await this.readyWithin(down, deadline - Date.now()))) {
          throw new ConnectionError(`Redis at ${this.connector.address} is unreachable: no connection within ${ms} ms (transport.commandTimeoutMs); nothing was written`);
        }
        continue;
      }
      const nodes = this.config.waitForReplicas === undefined ? undefined : this.replicas.unreadyMasters(units, Publisher.notWritable);
      if (nodes === undefined) return;
      // Their connections may come up, or a failover may move the slots to other masters: look again soon.
      if (Date.now() >= deadline) {
        throw new ConnectionError(`Redis at ${this.connector.address} is unreachable: no connection to the master of a partition within ${ms} ms (transport.commandTimeoutMs); nothing was written`);
      }
      await Promise.all(nodes.map((n) => this.readyWithin(n, 100)));
    }
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
      return this.bounded(this.replicated(client, t, unit.partition, wireCommand('xadd', args, t.routes[unit.partition]!), unitReplies));
    }
    if (this.config.entryMode === 'batch') {
      const cmd = rawCommand('xadd', this.batchRequest(args, unit), t.routes[unit.partition]!);
      unit.release?.(); // encoded: the events need not live until Redis replies
      return this.bounded(this.replicated(client, t, unit.partition, cmd, unitReplies));
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

  /** Sends `cmd`: its outcome; with `waitForReplicas`, once enough replicas have it (see ReplicaWait.after). */
  private replicated(client: Client, t: TypeInfo, partition: number, cmd: Command, unitReplies?: UnitReplies): Promise<WriteResult> {
    const write = send(client, cmd);
    unitReplies?.sent(0, [write]); // the XADD's reply (not its WAIT's)
    if (this.config.waitForReplicas === undefined) return write.then(noResult);
    return this.replicas.after(client, t, partition, write, cmd).then(noResult);
  }

  /** Several lanes (or per-event entries): each command on its lane's connection, pipelined per connection. */
  private sendMany(units: readonly PublishUnit[], unitReplies?: UnitReplies): Promise<WriteResult> {
    const now = Date.now();
    const perEvent = this.config.entryMode === 'event';
    const cluster = this.connector.isCluster;
    const replies: Promise<unknown>[] = [];
    // Commands per unit, so each reply maps back to its unit.
    const counts = new Array<number>(units.length);
    // Where each command's reply will be: [pipeline number, index in it], or [-1, index in replies].
    const slots: [number, number][] = [];
    const pipes: ChainableCommander[] = [];
    const pipeLen: number[] = [];
    const pipeOf = new Map<Client, number>();
    // waitForReplicas: one WAIT after the writes of each connection: in a Cluster, of each node of each pool
    // client (routed by one of its streams); else of each pipeline. `waits[u]` is where unit u's WAIT reply
    // will be; a Cluster unit first notes its node's group (`nodeWait`: group -> units), placed below.
    const wfr = this.config.waitForReplicas;
    const waits: [number, number][] | undefined = wfr === undefined ? undefined : new Array<[number, number]>(units.length);
    const nodeWait = cluster && wfr !== undefined ? new Map<string, number[]>() : undefined;
    // Cluster: the master each unit's WAIT went to (undefined: none known; that WAIT rejects).
    const issued: (string | undefined)[] | undefined = nodeWait === undefined ? undefined : new Array<string | undefined>(units.length);
    // Cluster: each unit's write commands (an ASK may send some to another master than the slot's).
    const sent: Command[][] | undefined = issued === undefined ? undefined : [];
    const issue = (client: Client, cmd: Command): void => {
      sent?.[sent.length - 1]!.push(cmd);
      if (cluster) {
        slots.push([-1, replies.length]);
        replies.push(send(client, cmd));
        return;
      }
      let pn = pipeOf.get(client);
      if (pn === undefined) {
        pn = pipes.length;
        pipes.push(client.pipeline());
        pipeLen.push(0);
        pipeOf.set(client, pn);
      }
      slots.push([pn, pipeLen[pn]!++]);
      queue(pipes[pn]!, cmd);
    };
    for (let u = 0; u < units.length; u++) {
      const unit = units[u]!;
      const t = this.info(unit.type);
      const client = this.pool[t.conns[unit.partition]!]!;
      sent?.push([]);
      const firstReply = replies.length;
      const minId = this.minId(t, now);
      const serialize = this.serializer(unit.type);
      const n = countOf(unit);
      if (!perEvent || n === 1) {
        const args: WireArg[] = this.xaddArgs(t, unit.partition, minId);
        const route = t.routes[unit.partition]!;
        if (n === 1) {
          pushEventFields(args as (string | number)[], eventsOf(unit)[0]!, this.source, serialize);
          issue(client, wireCommand('xadd', args, route));
        } else issue(client, rawCommand('xadd', this.batchRequest(args, unit), route));
        counts[u] = 1;
      } else {
        const evs = eventsOf(unit);
        for (let i = 0; i < evs.length; i++) {
          const args = this.xaddArgs(t, unit.partition, minId);
          pushEventFields(args, evs[i]!, this.source, serialize);
          issue(client, wireCommand('xadd', args, t.routes[unit.partition]!));
        }
        counts[u] = evs.length;
      }
      if (cluster) unitReplies?.sent(u, replies.slice(firstReply));
      unit.release?.();
      if (waits !== undefined) {
        if (nodeWait !== undefined) {
          const node = this.replicas.nodeOf(client, t, unit.partition);
          issued![u] = node;
          if (node === undefined) {
            // No master known for the slot: the WAIT rejects (ioredis would send it to any node).
            waits[u] = [-1, replies.length];
            replies.push(this.replicas.on(client, t, unit.partition));
          } else addTo(nodeWait, `${t.conns[unit.partition]} ${node}`, u);
        } else waits[u] = [pipeOf.get(client)!, -1]; // its pipeline's WAIT, placed below
      }
    }
    if (nodeWait !== undefined) {
      for (const members of nodeWait.values()) {
        const at = replies.length;
        replies.push(this.replicas.group(units, members));
        for (const u of members) waits![u] = [-1, at];
      }
    } else if (waits !== undefined && !cluster) {
      const at = pipes.map((pipe, pn) => {
        queue(pipe, waitCommand(wfr!.count, wfr!.timeoutMs));
        return pipeLen[pn]!++;
      });
      for (const w of waits) w[1] = at[w[0]]!;
    }
    const execs = pipes.map((pipe) =>
      pipe.exec().then(
        (r) => (r ?? []) as Reply[],
        (err: Error) => err,
      ),
    );
    const all = Promise.all([Promise.all(execs), Promise.allSettled(replies)]).then(([piped, direct]) => {
      const reply = ([pn, i]: [number, number]): Reply => {
        if (pn < 0) {
          const r = direct[i]!;
          return r.status === 'fulfilled' ? [null, r.value] : [r.reason as Error, undefined];
        }
        const res = piped[pn]!;
        return res instanceof Error ? [res, undefined] : (res[i] ?? [new Error('no reply'), undefined]);
      };
      return { writes: slots.map(reply), waits: waits?.map(reply) };
    });
    const checked = issued === undefined ? all : all.then((res) => this.replicas.moved(units, issued, res.waits!, sent!).then((waits) => ({ writes: res.writes, waits })));
    return this.bounded(checked.then((res) => this.results(units, counts, res.writes, res.waits)));
  }

  /**
   * Bounds a write's reply by `replyMs` from its sending, without a timer per write: writes in flight sit in a
   * set that one interval timer sweeps.
   */
  private bounded(p: Promise<WriteResult>): Promise<WriteResult> {
    return new Promise<WriteResult>((resolve, reject) => {
      const w: InFlight = { deadline: Date.now() + this.replyMs, reject, done: false };
      this.inflight.add(w);
      this.startSweeper();
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
          reject(err instanceof EventlaneError ? err : this.wrap(err));
        },
      );
    });
  }

  private startSweeper(): void {
    if (this.sweeper !== undefined) return;
    const every = Math.max(5, Math.min(this.connector.isCluster ? SLOW_WRITE_MS / 2 : 500, this.config.commandTimeoutMs / 4));
    this.sweeper = setInterval(() => this.sweep(), every);
    this.sweeper.unref();
  }

  private sweep(): void {
    if (this.inflight.size === 0 && this.slow.size === 0) {
      clearInterval(this.sweeper);
      this.sweeper = undefined;
      return;
    }
    const now = Date.now();
    for (const w of this.slow) {
      if (w.at > now) continue;
      this.slow.delete(w);
      w.free();
    }
    const ms = this.replyMs;
    const what = this.config.waitForReplicas === undefined ? 'transport.commandTimeoutMs' : 'transport.commandTimeoutMs + waitForReplicas.timeoutMs';
    for (const w of this.inflight) {
      if (w.deadline > now) continue;
      w.done = true;
      this.inflight.delete(w);
      w.reject(new ConnectionError(`Write to ${this.connector.address} got no reply within ${ms} ms (${what}); it may or may not have been applied`));
    }
  }

  /** Writes not sent yet reject with ClosedError (nothing of them was written). */
  close(): void {
    clearInterval(this.sweeper);
    this.sweeper = undefined;
    for (const stop of [...this.unsent]) stop(new ClosedError('redis-streams transport'));
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

  private wrap(err: unknown): Error {
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
