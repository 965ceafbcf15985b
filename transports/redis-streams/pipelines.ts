/**
 * A write's commands as they go out: standalone, pipelined per connection; in a Cluster each sent on its own
 * (ioredis routes it by its key). Each command's reply is found again by its place.
 */
import type { ChainableCommander, Command } from 'ioredis';
import type { Client } from './connection.js';
import type { Reply } from './replica-wait.js';
import { queue, send } from './wire-command.js';

/** Where a reply will be: [pipeline number, index in it], or [-1, index in the promises sent on their own]. */
export type Place = [number, number];

export class Pipelines {
  /** The replies of what was sent on its own (Cluster commands, WAITs), in order. */
  readonly direct: Promise<unknown>[] = [];
  /** The place of each command `issue`d, in order. */
  readonly places: Place[] = [];
  private readonly pipes: ChainableCommander[] = [];
  private readonly pipeLen: number[] = [];
  private readonly pipeOf = new Map<Client, number>();

  constructor(private readonly cluster: boolean) {}

  /** Sends `cmd` on `client`: on its own in a Cluster, else in the client's pipeline. */
  issue(client: Client, cmd: Command): void {
    if (this.cluster) {
      this.places.push(this.alone(send(client, cmd)));
      return;
    }
    const pn = this.pipeline(client);
    this.places.push([pn, this.pipeLen[pn]!++]);
    queue(this.pipes[pn]!, cmd);
  }

  /** A reply that comes on its own (a Cluster WAIT): its place. */
  alone(reply: Promise<unknown>): Place {
    this.direct.push(reply);
    return [-1, this.direct.length - 1];
  }

  /** The pipeline number of `client`'s pipeline (opened on first use). */
  pipeline(client: Client): number {
    let pn = this.pipeOf.get(client);
    if (pn === undefined) {
      pn = this.pipes.length;
      this.pipes.push(client.pipeline());
      this.pipeLen.push(0);
      this.pipeOf.set(client, pn);
    }
    return pn;
  }

  /** Queues `command()` at the end of every pipeline: its index in each. */
  appendToEach(command: () => Command): number[] {
    return this.pipes.map((pipe, pn) => {
      queue(pipe, command());
      return this.pipeLen[pn]!++;
    });
  }

  /** Executes the pipelines: once every reply is in, the reply at a place. */
  replies(): Promise<(place: Place) => Reply> {
    const execs = this.pipes.map((pipe) =>
      pipe.exec().then(
        (r) => (r ?? []) as Reply[],
        (err: Error) => err,
      ),
    );
    return Promise.all([Promise.all(execs), Promise.allSettled(this.direct)]).then(([piped, direct]) => ([pn, i]: Place): Reply => {
      if (pn < 0) {
        const r = direct[i]!;
        return r.status === 'fulfilled' ? [null, r.value] : [r.reason as Error, undefined];
      }
      const res = piped[pn]!;
      return res instanceof Error ? [res, undefined] : (res[i] ?? [new Error('no reply'), undefined]);
    });
  }
}
