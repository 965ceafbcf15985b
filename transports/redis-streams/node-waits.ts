/**
 * Cluster, `waitForReplicas`: the WAITs on one master's connection, one out at a time. A WAIT blocks its
 * connection until it returns (after its timeout, when too few replicas have the writes), and every command
 * sent after it waits with it: one WAIT per write, sent back to back, made each write wait for all the WAITs
 * before it on that connection. A WAIT asked for while one is out is sent when that one returns, and shared
 * by every write that asked meanwhile: it counts the replicas that have every write sent on the connection
 * before it, theirs included. So a write waits for at most two WAITs after it was sent.
 *
 * The writes of those who ask went out on the connection's socket of the moment: a WAIT sent on another
 * socket (the connection reopened meanwhile) would count replicas of nothing, so it rejects instead.
 */
import type { Command, Redis } from 'ioredis';
import { send } from './wire-command.js';

interface Next {
  /** The socket the writes of those who asked went out on. */
  socket: unknown;
  acks: Promise<number>;
}

function socketOf(redis: Redis): unknown {
  return (redis as { stream?: unknown }).stream;
}

function noop(): void {}

export class NodeWaits {
  /** The WAIT out on the connection, while one is. */
  private out: Promise<number> | undefined;
  /** The WAIT to send once `out` returns, while one was asked for. */
  private next: Next | undefined;

  constructor(
    private readonly redis: Redis,
    private readonly command: () => Command,
    /** The error of a WAIT that cannot be sent where the writes went (the connection is not open, or reopened). */
    private readonly unreachable: () => Error,
  ) {}

  /** Replicas that acknowledged every write sent on the connection so far (a WAIT's reply). */
  wait(): Promise<number> {
    const socket = socketOf(this.redis);
    if (this.next !== undefined) return this.next.socket === socket ? this.next.acks : Promise.reject(this.unreachable());
    if (this.out === undefined) return this.send(socket);
    const acks = this.out.then(noop, noop).then(() => {
      this.next = undefined;
      return this.send(socket);
    });
    this.next = { socket, acks };
    return acks;
  }

  private send(socket: unknown): Promise<number> {
    if (this.redis.status !== 'ready' || socketOf(this.redis) !== socket) return Promise.reject(this.unreachable());
    const acks = send<number>(this.redis, this.command());
    this.out = acks;
    const over = (): void => {
      if (this.out === acks) this.out = undefined;
    };
    acks.then(over, over);
    return acks;
  }
}
