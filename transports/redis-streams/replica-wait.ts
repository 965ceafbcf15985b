/**
 * `waitForReplicas`: the WAIT that follows a write and decides whether its publishes resolve. A WAIT
 * counts the replicas that have every write sent before it *on its connection*, so it must run on the
 * connection that took the write. Standalone, that is the pipeline's; in a Cluster each master has its own,
 * and ioredis retries a command whose connection closed (or was not open yet) on a random node until a
 * MOVED reply sends it home. A keyless WAIT is never moved: retried elsewhere it would count another
 * master's replicas. So in a Cluster a WAIT goes to the slot's master with retries off, a write waits for
 * its masters' connections first, and a unit whose slot moved in flight gets a WAIT on the new master.
 */
import type { Cluster } from 'ioredis';
import { ConnectionError, ReplicationError } from '../../src/errors.js';
import type { PublishUnit } from '../../src/transport.js';
import type { ResolvedConfig } from './config.js';
import type { Client, Connector } from './connection.js';
import { send, waitCommand } from './wire-command.js';

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

/** Adds `u` to the group `key` of `groups`. */
export function addTo(groups: Map<string, number[]>, key: string, u: number): void {
  const members = groups.get(key);
  if (members === undefined) groups.set(key, [u]);
  else members.push(u);
}

export class ReplicaWait {
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
   * `WAIT` on the connection that takes a partition's writes; in a Cluster sent to the slot's master with
   * a fixed target, which ioredis does not retry elsewhere. Failed, it rejects, and so does the publish.
   */
  on(client: Client, t: StreamInfo, partition: number): Promise<number> {
    const w = this.config.waitForReplicas!;
    const cmd = waitCommand(w.count, w.timeoutMs);
    if (!this.connector.isCluster) return send<number>(client, cmd);
    const slot = t.slots[partition]!;
    // Without a master for the slot ioredis would pick any node.
    if ((client as Cluster).slots[slot] === undefined) {
      return Promise.reject(new ConnectionError(`No master known for the slot of ${t.keys[partition]} on ${this.connector.address}: replication of the write cannot be checked`));
    }
    void (client as Cluster).sendCommand(cmd, undefined, { slot });
    return cmd.promise as Promise<number>;
  }

  /** Cluster: the WAIT covering `members`, units on one master's connection, sent after all their writes. */
  group(units: readonly PublishUnit[], members: number[]): Promise<number> {
    const last = units[members[members.length - 1]!]!;
    const t = this.info(last.type);
    return this.on(this.pool[t.conns[last.partition]!]!, t, last.partition);
  }

  /**
   * Resolves when `write` succeeded and a WAIT sent right after it on the same connection counted enough
   * replicas; else rejects (ReplicationError when only the WAIT fell short).
   */
  after(client: Client, t: StreamInfo, partition: number, write: Promise<unknown>): Promise<void> {
    const node = this.nodeOf(client, t, partition);
    const acks = this.on(client, t, partition);
    acks.catch(() => undefined); // judged below, after the write
    return write.then(() =>
      acks
        // Slot moved while in flight: the write was redirected (MOVED) after its WAIT went to the old master.
        .then((n) => (this.nodeOf(client, t, partition) === node ? n : this.on(client, t, partition)))
        .then((n) => {
          const short = this.shortfall(n);
          if (short) throw short;
        }),
    );
  }

  /**
   * Cluster, after a write's replies: units whose slot moved to another master meanwhile were redirected
   * there (MOVED) after their WAIT went to the old one (`issued`), which counted replicas of nothing. They
   * get a WAIT on the new master instead, one per connection; the others keep theirs.
   */
  async moved(units: readonly PublishUnit[], issued: (string | undefined)[], waits: Reply[]): Promise<Reply[]> {
    let again: Map<string, number[]> | undefined;
    for (let u = 0; u < units.length; u++) {
      const unit = units[u]!;
      const t = this.info(unit.type);
      const node = this.nodeOf(this.pool[t.conns[unit.partition]!]!, t, unit.partition);
      if (issued[u] === undefined || node === undefined || node === issued[u]) continue;
      addTo((again ??= new Map()), `${t.conns[unit.partition]} ${node}`, u);
    }
    if (again === undefined) return waits;
    const out = waits.slice();
    await Promise.all(
      [...again.values()].map(async (members) => {
        const reply: Reply = await this.group(units, members).then(
          (n) => [null, n],
          (err: Error) => [err, undefined],
        );
        for (const u of members) out[u] = reply;
      }),
    );
    return out;
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
