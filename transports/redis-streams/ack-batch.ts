/**
 * Acknowledgement batching of a Redis Streams subscription: ids finished are gathered per stream and go out
 * as one variadic XACK per stream, at the end of the turn (on the command connection) or ahead of a reader's
 * next blocking read (on its connection). Acked retry-stream entries are deleted (XDEL). An XACK that
 * failed on a lost or stalled connection (or a failover) is sent again, waiting longer each time, while the
 * subscription is open: left alone, its entries would be reclaimed after minIdleMs and their events (a whole
 * batch entry's) handled again.
 */
import { backoffDelay } from '../../src/backoff.js';
import { describeError } from '../../src/errors.js';
import { isTransientWriteError, TRANSIENT_RETRY, type Client } from './connection.js';
import type { ConsumerContext, StreamInfo } from './consumer-records.js';
import { encodeXack, rawCommand, send } from './wire-command.js';

/** The ids of one XACK sent on a stream and not answered yet. */
interface SentAcks {
  stream: StreamInfo;
  ids: string[];
}

export class AckBatcher {
  /** A flush is due at the end of this turn: a reader about to block may send the acks first. */
  scheduled = false;
  private inFlight = 0;
  private idle: (() => void) | undefined;
  private readonly flushNow = (): void => this.flush();
  /**
   * A flush of XACKs to send again (`retryLater`), and how many waits since an XACK last went through (0: acks
   * go through). The ids to send again are back among the gathered ones (`StreamInfo.acks`).
   */
  private retryTimer: NodeJS.Timeout | undefined;
  private retries = 0;
  /**
   * XACKs sent and not answered yet. A pending re-read on another
   * connection can be answered first and return their entries, still pending in Redis.
   */
  private readonly sending = new Set<SentAcks>();

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
    for (const s of this.ctx.streams) {
      this.send(s, this.ctx.command);
      if (s.deletes.length > 0) {
        const ids = s.deletes;
        s.deletes = [];
        this.inFlight++;
        this.deleteAcked(s, ids);
      }
    }
  }

  /** One XACK of what stream `s` has finished, on `conn` (the command connection, or an idle reader's). */
  send(s: StreamInfo, conn: Client): void {
    if (s.acks.length === 0) return;
    const ids = s.acks;
    s.acks = [];
    this.inFlight++;
    const sent: SentAcks = { stream: s, ids };
    this.sending.add(sent);
    send<number>(conn, rawCommand('xack', encodeXack(s.ackHead, ids), [s.key])).then(
      () => {
        this.sending.delete(sent);
        if (this.retries > 0) {
          this.retries = 0;
          this.ctx.logger.info({ group: this.ctx.spec.group }, 'XACK succeeds again');
        }
        if (s.retry) this.deleteAcked(s, ids);
        else this.settled();
      },
      (e: unknown) => {
        this.sending.delete(sent);
        if (isTransientWriteError(e) && !this.ctx.closing) {
          if (this.retries === 0) this.ctx.logger.warn({ err: describeError(e), stream: s.key, count: ids.length }, 'XACK failed; it is sent again');
          for (const id of ids) s.acks.push(id);
          this.retryLater();
        } else {
          this.ctx.logger.warn({ err: describeError(e), stream: s.key, count: ids.length }, 'XACK failed; entries will be redelivered');
        }
        this.settled();
      },
    );
  }

  /** Sends the acks gathered again after a wait (TRANSIENT_RETRY), unless a flush is scheduled already. */
  private retryLater(): void {
    if (this.retryTimer !== undefined) return;
    this.retryTimer = setTimeout(
      () => {
        this.retryTimer = undefined;
        if (!this.ctx.closing) this.flush();
      },
      backoffDelay(TRANSIENT_RETRY, ++this.retries),
    );
  }

  /**
   * Whether entry `id` of stream `s` is finished here and its XACK not through yet: gathered (also to be sent
   * again after a failure) or sent and not answered. A pending re-read must not deliver it again.
   */
  acking(s: StreamInfo, id: string): boolean {
    if (s.acks.includes(id)) return true;
    for (const sent of this.sending) if (sent.stream === s && sent.ids.includes(id)) return true;
    return false;
  }

  /** Flushes what is gathered; resolves when every XACK sent (and its XDEL) has settled. */
  async drain(): Promise<void> {
    clearTimeout(this.retryTimer);
    this.retryTimer = undefined;
    this.flush();
    if (this.inFlight > 0) await new Promise<void>((resolve) => (this.idle = resolve));
  }

  /**
   * Retry-stream entries are deleted once acked. One the XDEL missed stays in the retry stream for good (nothing
   * else deletes it; the group has finished it, so it is not counted as waiting): sent again, like an XACK.
   */
  private deleteAcked(s: StreamInfo, ids: string[]): void {
    this.ctx.cmd.xdel(s.key, ...ids).then(this.settled, (e: unknown) => {
      if (isTransientWriteError(e) && !this.ctx.closing) {
        for (const id of ids) s.deletes.push(id);
        this.retryLater();
      } else this.ctx.logger.warn({ err: describeError(e), stream: s.key, count: ids.length }, 'XDEL of acked retry entries failed; they stay in the retry stream');
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
