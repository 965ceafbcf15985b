/**
 * The partitions' turns of a publisher's writes. A write normally goes out at once; one that must wait (a
 * connection it needs is down, or an earlier write holds one of its partitions) takes its partitions' turns
 * (`queued`), so that a key's events are stored in the order they were published. A write out long (a
 * Cluster master in failover) holds its partitions (`hold`) until its own commands have their replies.
 */
import { ClosedError, ConnectionError } from '../../src/errors.js';
import type { PublishUnit, WriteResult } from '../../src/transport.js';
import type { ResolvedConfig } from './config.js';
import type { Client } from './connection.js';

/** What the turns need to know of the publisher. */
export interface TurnsHost {
  readonly config: ResolvedConfig;
  /** The transport's address, for error messages. */
  readonly address: string;
  /** The pool connection a unit is written on. */
  clientOf(unit: PublishUnit): Client;
  /** Per partition of a type: the turn of the last write waiting for its partitions, while one is. */
  heldOf(type: string): (Promise<void> | undefined)[];
  /**
   * Cluster with `waitForReplicas`: the masters these units go to whose connection is not writable (a WAIT
   * needs it); undefined when none.
   */
  unreadyMasters(units: readonly PublishUnit[]): Client[] | undefined;
}

export class PartitionTurns {
  /** Writes waiting for each client's next 'ready'. */
  private readonly readyWaiters = new Map<Client, Set<() => void>>();
  /** Writes that hold partitions (`queued`, `hold`) and have not ended their turns yet. */
  private held = 0;
  /** Writes in `queued` not sent yet: each one's rejection (see `beforeDeadline`). */
  private readonly unsent = new Set<(err: unknown) => void>();

  constructor(private readonly host: TurnsHost) {}

  static notWritable(client: Client): boolean {
    // Not ready, or ready on paper while the socket already closed (a kill not yet noticed).
    return client.status !== 'ready' || (client as { stream?: { writable: boolean } }).stream?.writable === false;
  }

  /** Whether a write of `units` may be sent at once: no write holds partitions, and its connections are up. */
  sendable(units: readonly PublishUnit[]): boolean {
    return this.held === 0 && !this.mustWait(units);
  }

  /**
   * Whether a unit's connection is down (or, with waitForReplicas in a Cluster, a master's connection a WAIT
   * needs): the write waits for it instead of failing at once, since nothing has been sent yet.
   */
  private mustWait(units: readonly PublishUnit[]): boolean {
    for (const unit of units) if (PartitionTurns.notWritable(this.host.clientOf(unit))) return true;
    return this.host.config.waitForReplicas !== undefined && this.host.unreadyMasters(units) !== undefined;
  }

  /**
   * A write that waits for connections, and every later write to one of its partitions, take their turn:
   * one sent at once could overtake it on a partition whose connection is up while another of its
   * partitions' is not, and a key's events would be stored out of order. The write is sent (`send`) within
   * commandTimeoutMs from here, the time behind earlier writes included, or rejects with nothing written
   * (ClosedError once the publisher closes). Its turn ends when it is sent, or, when it never is, once the
   * writes before it are through: a later write must not overtake those either.
   */
  queued(units: readonly PublishUnit[], send: () => Promise<WriteResult>): Promise<WriteResult> {
    const deadline = Date.now() + this.host.config.commandTimeoutMs;
    const before: Promise<void>[] = [];
    let turnOver!: () => void;
    const turn = new Promise<void>((resolve) => (turnOver = resolve));
    for (const unit of units) {
      const held = this.host.heldOf(unit.type);
      const prev = held[unit.partition];
      if (prev !== undefined && prev !== turn) before.push(prev);
      held[unit.partition] = turn;
    }
    this.held++;
    const prior = Promise.all(before);
    const sent = this.beforeDeadline(
      prior.then(() => this.whenWritable(units, deadline)),
      deadline,
    ).then(() => ({ result: send() }));
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
      const ms = this.host.config.commandTimeoutMs;
      const timer = setTimeout(
        () =>
          stop(
            new ConnectionError(
              `Write to ${this.host.address} not sent within ${ms} ms (transport.commandTimeoutMs): earlier writes to its partitions are still out, or a connection is down; nothing was written`,
            ),
          ),
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
   * it settles (publisher.ts, `holdOnceSlow`): ioredis retries its commands after a failover, and a later
   * write to one of those partitions sent meanwhile could reach the new master first and store a key's
   * events out of order. Later writes to them wait (`queued`); writes to other partitions go on. A unit's
   * turn ends when its own commands have their replies (`settled[u]`), or when the write settles (its own, or
   * commandTimeoutMs: a master that stopped answering without closing its socket never replies, and the turn
   * must not outlive the write).
   */
  hold(units: readonly PublishUnit[], write: Promise<unknown>, settled: readonly (Promise<unknown> | undefined)[]): void {
    const over = (): void => undefined;
    const turns: Promise<void>[] = [];
    for (let u = 0; u < units.length; u++) {
      const unit = units[u]!;
      const own = settled[u];
      const done = (own === undefined ? write : Promise.race([own, write])).then(over, over);
      const held = this.host.heldOf(unit.type);
      const prev = held[unit.partition];
      // After a turn it joined, if one is still open (a later write queued behind this one keeps its place).
      const turn = prev === undefined ? done : Promise.all([prev, done]).then(over);
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
      const held = this.host.heldOf(units[u]!.type);
      if (held[units[u]!.partition] === turnOf(u)) held[units[u]!.partition] = undefined;
    }
  }

  /** Resolves once every connection `units` need is up; rejects with ConnectionError at `deadline`. */
  private async whenWritable(units: readonly PublishUnit[], deadline: number): Promise<void> {
    const ms = this.host.config.commandTimeoutMs;
    for (;;) {
      const down = units.map((u) => this.host.clientOf(u)).find(PartitionTurns.notWritable);
      if (down !== undefined) {
        if (!(await this.readyWithin(down, deadline - Date.now()))) {
          throw new ConnectionError(`Redis at ${this.host.address} is unreachable: no connection within ${ms} ms (transport.commandTimeoutMs); nothing was written`);
        }
        continue;
      }
      const nodes = this.host.config.waitForReplicas === undefined ? undefined : this.host.unreadyMasters(units);
      if (nodes === undefined) return;
      // Their connections may come up, or a failover may move the slots to other masters: look again soon.
      if (Date.now() >= deadline) {
        throw new ConnectionError(`Redis at ${this.host.address} is unreachable: no connection to the master of a partition within ${ms} ms (transport.commandTimeoutMs); nothing was written`);
      }
      await Promise.all(nodes.map((n) => this.readyWithin(n, 100)));
    }
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

  /** Writes not sent yet reject with ClosedError (nothing of them was written). */
  close(): void {
    for (const stop of [...this.unsent]) stop(new ClosedError('redis-streams transport'));
  }
}
