/**
 * `waitForReplicas`: the WAIT that follows a write and decides whether its publishes resolve. A WAIT
 * counts the replicas that have every write sent before it *on its connection*, so it must run on the
 * connection that took the write. Standalone, that is the pipeline's; in a Cluster each master has its own,
 * and ioredis retries a command whose connection closed (or was not open yet) on a random node until a
 * MOVED reply sends it home. A keyless WAIT is never moved: retried elsewhere it would count another
 * master's replicas. So in a Cluster a WAIT goes on the master's own client (no retries), a write waits for
 * its masters' connections first, and a unit whose write went elsewhere (MOVED, ASK) gets a WAIT there.
 */
import type { Cluster, Redis } from 'ioredis';
import { ConnectionError, ReplicationError } from '../../src/errors.js';
import type { PublishUnit } from '../../src/transport.js';
import type { ResolvedConfig } from './config.js';
import type { Client, Connector } from './connection.js';
import type { Command } from 'ioredis';
import { NodeWaits } from './node-waits.js';
import { redirectedNode, send, waitCommand } from './wire-command.js';

/** Where a type's partitions are written. */
export interface StreamInfo {
  keys: string[];
  /** Pool connection of each partition. */
  conns: number[];
  /** Cluster slot of each partition's stream (as ioredis routes its commands); empty when not a cluster. */
  slots: number[];
}

/** A command's outcome as the write collects it: [error, reply]. */
export type Reply = [Error | null, unknown];

/** The worse of two WAIT outcomes: an error, else the fewer replicas. */
function worse(a: Reply, b: Reply): Reply {
  if (a[0]) return a;
  if (b[0]) return b;
  return Number(a[1]) <= Number(b[1]) ? a : b;
}

/** Adds `u` to the group `key` of `groups`. */
export function addTo(groups: Map<string, number[]>, key: string, u: number): void {
  const members = groups.get(key);
  if (members === undefined) groups.set(key, [u]);
  else members.push(u);
}

export class ReplicaWait {
  /** Cluster: each master connection's WAITs, one out at a time (node-waits.ts). */
  private readonly nodeWaits = new WeakMap<Redis, NodeWaits>();

  constructor(
    private readonly config: ResolvedConfig,
    private readonly connector: Connector,
    private readonly pool: Client[],
    private readonly info: (type: string) => StreamInfo,
  ) {}

  /** Cluster: the master that holds the slot of a partition's stream, as `client` knows it now. */
  nodeOf(client: Client, t: StreamInfo, partition: number): string | undefined {
    return this.connector.isCluster ? (client as Cluster).slots[t.slots[partition]!]?.[0] : undefined;
  }

  /**
   * Cluster: the masters these units go to whose connection is not ready yet (each master has its own,
   * opened on first use; this starts it). A command sent to one of them fails and is retried on a random
   * node; the WAIT must not be, so the write waits for them first. Undefined when none (or not a Cluster).
   */
  unreadyMasters(units: readonly PublishUnit[], notWritable: (c: Client) => boolean): Client[] | undefined {
    if (!this.connector.isCluster) return undefined;
    // The masters the units go to, per pool client (usually one or two lookups for a whole write).
    let wanted: Map<Cluster, Set<string>> | undefined;
    for (const unit of units) {
      const t = this.info(unit.type);
      const client = this.pool[t.conns[unit.partition]!] as Cluster;
      const key = client.status === 'ready' ? this.nodeOf(client, t, unit.partition) : undefined;
      if (key === undefined) continue; // no master known for the slot: `on` rejects
      wanted ??= new Map();
      const keys = wanted.get(client);
      if (keys === undefined) wanted.set(client, new Set([key]));
      else keys.add(key);
    }
    if (wanted === undefined) return undefined;
    let out: Client[] | undefined;
    for (const [client, keys] of wanted) {
      for (const node of client.nodes('master')) {
        if (!keys.has(`${node.options.host}:${node.options.port}`) || !notWritable(node)) continue;
        if (node.status === 'wait') node.connect().catch(() => undefined);
        (out ??= []).push(node);
      }
    }
    return out;
  }

  /**
   * `WAIT` on the connection that takes a partition's writes; in a Cluster on the slot's master's own client
   * (`onNode`). Failed, it rejects, and so does the publish.
   */
  on(client: Client, t: StreamInfo, partition: number): Promise<number> {
    if (!this.connector.isCluster) return send<number>(client, this.waitCommand());
    const node = this.nodeOf(client, t, partition);
    if (node === undefined) {
      return Promise.reject(new ConnectionError(`No master known for the slot of ${t.keys[partition]} on ${this.connector.address}: replication of the write cannot be checked`));
    }
    return this.onNode(client, node);
  }

  private waitCommand(): Command {
    const w = this.config.waitForReplicas!;
    return waitCommand(w.count, w.timeoutMs);
  }

  /** Cluster: the WAIT covering `members`, units on one master's connection, sent after all their writes. */
  group(units: readonly PublishUnit[], members: number[]): Promise<number> {
    const last = units[members[members.length - 1]!]!;
    const t = this.info(last.type);
    return this.on(this.pool[t.conns[last.partition]!]!, t, last.partition);
  }

  /**
   * Resolves when `write` (the command `cmd`) succeeded and a WAIT sent right after it on the same
   * connection counted enough replicas; else rejects (ReplicationError when only the WAIT fell short).
   */
  after(client: Client, t: StreamInfo, partition: number, write: Promise<unknown>, cmd: Command): Promise<void> {
    const node = this.nodeOf(client, t, partition);
    const acks = this.on(client, t, partition);
    acks.catch(() => undefined); // judged below, after the write
    return write.then(() => {
      const landed = this.landed(client, t, partition, [cmd], node);
      // Sent elsewhere than its WAIT (see `moved`): a WAIT where it landed decides.
      const n = landed === undefined ? acks : this.onNode(client, [...landed][0]!);
      return n.then((count) => {
        const short = this.shortfall(count);
        if (short) throw short;
      });
    });
  }

  /**
   * Cluster, after a write's replies: the masters the commands `cmds` of a partition's unit went to, when
   * that is not just `issued`, the one its WAIT went to; undefined when it is. A command redirected by ASK
   * (its key's slot being migrated) or MOVED (the slot moved in flight) went to the node the last redirect
   * named (`redirectedNode`: ioredis's slot map can name the old master again for a while after a MOVED,
   * when the refresh it starts reads CLUSTER SLOTS from a node that has not heard of the move, and a unit
   * must not be taken as replicated on the old master's replicas).
   * Other commands: the slot's master in ioredis's map now. A WAIT on `issued` counts replicas of nothing there.
   */
  private landed(client: Client, t: StreamInfo, partition: number, cmds: readonly Command[], issued: string | undefined): Set<string> | undefined {
    if (issued === undefined) return undefined; // its WAIT rejected already
    const now = this.nodeOf(client, t, partition) ?? issued;
    if (now === issued && cmds.every((cmd) => redirectedNode(cmd) === undefined)) return undefined; // the usual case
    const nodes = new Set<string>();
    for (const cmd of cmds) nodes.add(redirectedNode(cmd) ?? now);
    return nodes.size === 1 && nodes.has(issued) ? undefined : nodes;
  }

  /**
   * Cluster, after a write's replies: units whose commands went to other masters than their WAIT did (see
   * `landed`) get a WAIT on each of those, one per connection and master, and keep the worst of the replies
   * (their first WAIT's too, where some of their commands stayed on its master); the others keep theirs.
   */
  async moved(units: readonly PublishUnit[], issued: (string | undefined)[], waits: Reply[], cmds: Command[][]): Promise<Reply[]> {
    let again: Map<string, number[]> | undefined;
    const where: Set<string>[] = [];
    for (let u = 0; u < units.length; u++) {
      const unit = units[u]!;
      const t = this.info(unit.type);
      const conn = t.conns[unit.partition]!;
      const landed = this.landed(this.pool[conn]!, t, unit.partition, cmds[u]!, issued[u]);
      if (landed === undefined) continue;
      where[u] = landed;
      for (const node of landed) if (node !== issued[u]) addTo((again ??= new Map()), `${conn} ${node}`, u);
    }
    if (again === undefined) return waits;
    const out = waits.slice();
    // Units that moved entirely: their first WAIT does not count.
    for (let u = 0; u < units.length; u++) if (where[u] !== undefined && !where[u]!.has(issued[u]!)) out[u] = [null, Infinity];
    await Promise.all(
      [...again].map(async ([group, members]) => {
        const [conn, node] = group.split(' ') as [string, string];
        const reply: Reply = await this.onNode(this.pool[Number(conn)]!, node).then(
          (n) => [null, n],
          (err: Error) => [err, undefined],
        );
        for (const u of members) out[u] = worse(out[u]!, reply);
      }),
    );
    return out;
  }

  /**
   * Cluster: `WAIT` on the connection to master `node` ("host:port"): the slot's master, or where an ASK or
   * MOVED sent a write. Sent to that node's own client, which ioredis does not retry elsewhere, and only
   * while its connection is open (queued for a new one, it would count replicas of nothing). One WAIT out per
   * connection: one asked for meanwhile is shared (node-waits.ts).
   */
  onNode(client: Client, node: string): Promise<number> {
    const redis = (client as Cluster).nodes('all').find((n) => `${n.options.host}:${n.options.port}` === node);
    const unreachable = (): Error =>
      new ConnectionError(`No open connection to master ${node} on ${this.connector.address}${redis === undefined ? ' (not a known node)' : ''}: replication of the write cannot be checked`);
    if (redis === undefined || redis.status !== 'ready') return Promise.reject(unreachable());
    let waits = this.nodeWaits.get(redis);
    if (waits === undefined) {
      waits = new NodeWaits(redis, () => this.waitCommand(), unreachable);
      this.nodeWaits.set(redis, waits);
    }
    return waits.wait();
  }

  /** `n` replicas acknowledged: undefined when that is enough, else the ReplicationError to fail with. */
  shortfall(n: number): ReplicationError | undefined {
    const w = this.config.waitForReplicas!;
    if (n >= w.count) return undefined;
    return new ReplicationError(
      `Written to ${this.connector.address}, but ${n} of the ${w.count} replicas required acknowledged it within ${w.timeoutMs} ms (transport.waitForReplicas): the events are on the master, publishing them again may store them twice, and they are lost if the master fails first`,
      n,
      w.count,
    );
  }
}
