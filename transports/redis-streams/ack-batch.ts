/**
 * Acknowledgement batching of a Redis Streams subscription: ids finished are gathered per stream and go out
 * as one variadic XACK per stream, at the end of the turn (on the command connection) or ahead of a reader's
 * next blocking read (on its connection). Acked retry-stream entries are deleted (XDEL).
 */
import { describeError } from '../../src/errors.js';
import type { Client } from './connection.js';
import type { ConsumerContext, StreamInfo } from './consumer-records.js';
import { sendWire } from './wire-command.js';

export class AckBatcher {
  /** A flush is due at the end of this turn: a reader about to block may send the acks first. */
  scheduled = false;
  private inFlight = 0;
  private idle: (() => void) | undefined;
  private readonly flushNow = (): void => this.flush();

  constructor(private readonly ctx: ConsumerContext) {}

  ack(idx: number, id: string): void {
    this.ctx.streams[idx]!.acks.push(id);
    if (!this.scheduled) {
      this.scheduled = true;
      setImmediate(this.flushNow);
    }
  }

  flush(): void {
    this.scheduled = false;
    for (const s of this.ctx.streams) this.send(s, this.ctx.command);
  }

  /** One XACK of what stream `s` has finished, on `conn` (the command connection, or an idle reader's). */
  send(s: StreamInfo, conn: Client): void {
    if (s.acks.length === 0) return;
    const ids = s.acks;
    s.acks = [];
    this.inFlight++;
    ids.unshift(s.key, this.ctx.spec.group);
    sendWire<number>(conn, 'xack', ids, [s.key]).then(s.retry ? () => this.deleteAcked(s, ids) : this.settled, (e: unknown) => {
      this.ctx.logger.warn({ err: describeError(e), stream: s.key, count: ids.length - 2 }, 'XACK failed; entries will be redelivered');
      this.settled();
    });
  }

  /** Flushes what is gathered; resolves when every XACK sent (and its XDEL) has settled. */
  async drain(): Promise<void> {
    this.flush();
    if (this.inFlight > 0) await new Promise<void>((resolve) => (this.idle = resolve));
  }

  /** Retry-stream entries are deleted once acked (`ids` is the XACK's arguments: key, group, ids). */
  private deleteAcked(s: StreamInfo, ids: string[]): void {
    this.ctx.cmd.xdel(s.key, ...ids.slice(2)).then(this.settled, (e: unknown) => {
      this.ctx.logger.debug({ err: describeError(e), stream: s.key }, 'XDEL of acked retry entries failed');
      this.settled();
    });
  }

  private readonly settled = (): void => {
    if (--this.inFlight === 0 && this.idle !== undefined) {
      const idle = this.idle;
      this.idle = undefined;
      idle();
    }
  };
}
