/**
 * `waitForReplicas` for a write of several units (publisher.ts, sendMany): one WAIT after the writes of each
 * connection. Standalone, one at the end of each pipeline; in a Cluster one per node of each pool client
 * (on the master's own connection, see replica-wait.ts), and units whose commands an ASK or MOVED sent to
 * another master get a WAIT there once the replies are in.
 */
import type { Command } from 'ioredis';
import type { PublishUnit } from '../../src/transport.js';
import type { Client } from './connection.js';
import type { Pipelines, Place } from './pipelines.js';
import { addTo, type ReplicaWait, type Reply, type StreamInfo } from './replica-wait.js';
import { waitCommand } from './wire-command.js';

export class WriteWaits {
  /** Per unit, where its WAIT's reply will be (standalone: its pipeline's, the index set by `place`). */
  private readonly places: Place[];
  /** Cluster: the units per pool connection and master ("conn host:port"), one WAIT each. */
  private readonly nodeWait: Map<string, number[]> | undefined;
  /** Cluster: the master each unit's WAIT went to (undefined: none known; that WAIT rejects). */
  private readonly issued: (string | undefined)[] | undefined;
  /** Cluster: each unit's write commands (an ASK may send some to another master than the slot's). */
  private readonly cmds: Command[][] | undefined;

  constructor(
    private readonly units: readonly PublishUnit[],
    private readonly replicas: ReplicaWait,
    private readonly cluster: boolean,
  ) {
    this.places = new Array<Place>(units.length);
    if (cluster) {
      this.nodeWait = new Map();
      this.issued = new Array<string | undefined>(units.length);
      this.cmds = [];
    }
  }

  /** Where unit `u`'s write commands are noted as they are issued (Cluster only). */
  commandsOf(u: number): Command[] | undefined {
    if (this.cmds === undefined) return undefined;
    return (this.cmds[u] = []);
  }

  /** Unit `u` (a partition of `t`) was written on `client`: its WAIT goes with its connection's (or node's). */
  unitSent(wire: Pipelines, u: number, client: Client, t: StreamInfo, conn: number): void {
    if (this.nodeWait === undefined) {
      this.places[u] = [wire.pipeline(client), -1]; // its pipeline's WAIT, placed by `place`
      return;
    }
    const partition = this.units[u]!.partition;
    const node = this.replicas.nodeOf(client, t, partition);
    this.issued![u] = node;
    // No master known for the slot: the WAIT rejects (ioredis would send it to any node).
    if (node === undefined) this.places[u] = wire.alone(this.replicas.on(client, t, partition));
    else addTo(this.nodeWait, `${conn} ${node}`, u);
  }

  /** After every unit's writes: the WAITs themselves. */
  place(wire: Pipelines, count: number, timeoutMs: number): void {
    if (this.nodeWait !== undefined) {
      for (const members of this.nodeWait.values()) {
        const at = wire.alone(this.replicas.group(this.units, members));
        for (const u of members) this.places[u] = at;
      }
    } else if (!this.cluster) {
      const at = wire.appendToEach(() => waitCommand(count, timeoutMs));
      for (const w of this.places) w[1] = at[w[0]]!;
    }
  }

  /** Each unit's WAIT reply, once the write's replies are in (`reply`); in a Cluster, after `moved`. */
  replies(reply: (place: Place) => Reply): Promise<Reply[]> {
    const waits = this.places.map(reply);
    if (this.issued === undefined) return Promise.resolve(waits);
    return this.replicas.moved(this.units, this.issued, waits, this.cmds!);
  }
}
