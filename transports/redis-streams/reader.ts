/**
 * The read connections of a Redis Streams subscription: a reader per connection (one for every stream, or
 * in a Cluster one per partition, whose two streams share a slot), the XREADGROUP each sends (COUNT sized
 * to the prefetch room, acks waiting for its streams corked ahead of it) and the watchdog that fails a read
 * outstanding past its deadline and drops its connection.
 */
import type { Cluster, Command, Redis } from 'ioredis';
import type { AckBatcher } from './ack-batch.js';
import { corkable, disconnectNow, type Client } from './connection.js';
import { noop, type ConsumerContext, type ReadReply } from './consumer-records.js';
import type { Deliveries } from './deliveries.js';
import { encodeCommand, rawCommand, send, slotOf, wireCommand } from './wire-command.js';

export class Reader {
  conn: Client | undefined;
  drainPending = true;
  /** The read outstanding on `conn` (until its reply or error comes), when it was sent and when the watchdog gives up on it (ms). */
  reading: Command | undefined;
  readSince = 0;
  readDeadline = 0;
  /** COUNT of the last read: a reply that filled it means a backlog. */
  lastCount = 0;
  readonly lastIds: string[];
  /** Per stream (position in `streams`): its pending drain has found nothing after `lastIds`. */
  readonly drained: boolean[];
  /** Request bytes of this reader's read of new entries, per COUNT, and the arguments ioredis routes it by (`ReadConnections.readNew`). */
  readonly newReads = new Map<number, Buffer>();
  newRoute: string[] | undefined = undefined;
  constructor(readonly streams: number[]) {
    this.lastIds = streams.map(() => '0');
    this.drained = streams.map(() => false);
  }

  /** Back to draining this consumer's own pending entries from the start (a failed read, a reconnect). */
  redrain(): void {
    this.drainPending = true;
    this.lastIds.fill('0');
    this.drained.fill(false);
  }
}

export class ReadConnections {
  readonly readers: Reader[] = [];
  private watchdogTimer: NodeJS.Timeout | undefined;
  /** When the watchdog last ran (ms). */
  private lastWatch = 0;
  private readonly connectionError = (err: Error): void => this.ctx.logger.debug({ err: err.message, group: this.ctx.spec.group }, 'redis read connection error');

  constructor(
    private readonly ctx: ConsumerContext,
    private readonly deliveries: Deliveries,
    private readonly acks: AckBatcher,
  ) {}

  /** Every reader has a connection, and each is ready (none between a loss and its reconnect). */
  allUp(): boolean {
    return this.readers.every((r) => r.conn !== undefined && r.conn.status === 'ready');
  }

  /** Creates the readers and opens their connections. */
  open(partitions: number): Promise<PromiseSettledResult<Client>[]> {
    if (this.ctx.connector.isCluster) {
      // One reader per partition: its two keys share a slot, so one XREADGROUP covers them.
      for (let p = 0; p < partitions; p++) this.readers.push(new Reader([2 * p, 2 * p + 1]));
    } else {
      this.readers.push(new Reader(this.ctx.streams.map((_, i) => i)));
    }
    return Promise.allSettled(this.readers.map(() => this.openOne()));
  }

  /**
   * Readers for streams added while running (a raised partition count): one for them all, or in a Cluster one per
   * partition. They have no connection yet: each read loop opens its own (`openUnlessClosed`).
   */
  add(streams: readonly number[]): Reader[] {
    const added: Reader[] = [];
    if (this.ctx.connector.isCluster) for (let k = 0; k + 1 < streams.length; k += 2) added.push(new Reader([streams[k]!, streams[k + 1]!]));
    else if (streams.length > 0) added.push(new Reader([...streams]));
    this.readers.push(...added);
    return added;
  }

  /**
   * Makes `conn` the reader's connection. After a reconnect ioredis sends the read that was outstanding again
   * (`autoResendUnfulfilledCommands`, kept for the acks corked ahead of it), and that read asks for new entries
   * (`>`): entries Redis had already handed to the lost read (its reply died with the socket) are in this
   * consumer's pending list, where only the reclaim would find them, `minIdleMs` later. So a reconnect sends the
   * reader back to draining its own pending entries, as a failed read does, once the resent read has returned
   * (new entries, or nothing after `blockMs`). A Cluster client does the same per node: a node's connection that
   * ends ('-node') fails its commands with "Connection is closed", which the client sends again on a new one
   * (`retryDelayOnFailover`) — the same lost reply, and a 'ready' of the whole client never comes.
   */
  attach(r: Reader, conn: Client): void {
    r.conn = conn;
    const drain = (node?: Redis): void => {
      if (r.conn !== conn || this.ctx.closing) return;
      if (node !== undefined && !this.holdsReader(conn as Cluster, node, r)) return;
      this.ctx.logger.debug({ group: this.ctx.spec.group }, 'redis read connection reconnected; draining own pending entries');
      r.redrain();
    };
    // Registered once connected: every later 'ready' is a reconnect of this connection.
    conn.on('ready', drain);
    if (this.ctx.connector.isCluster) conn.on('-node', drain);
  }

  /**
   * Whether the Cluster node that went away is the master of the reader's slot: a drain re-reads the reader's
   * pending entries, which raises the delivery count of those still running here, so not for another node.
   */
  private holdsReader(cluster: Cluster, node: Redis, r: Reader): boolean {
    const slot = slotOf(this.ctx.streams[r.streams[0]!]!.key);
    return cluster.slots[slot]?.[0] === `${node.options.host}:${node.options.port}`;
  }

  startWatchdog(): void {
    this.lastWatch = Date.now();
    this.watchdogTimer = setInterval(() => this.watch(), this.watchEveryMs());
    this.watchdogTimer.unref();
  }

  /**
   * At close: no more watchdog, and blocking reads are aborted. What Redis delivered to the reads cut off (or to
   * a last reply not taken) stays pending: the result names, per reader, its streams and when its last read was sent.
   */
  stop(): { streams: readonly number[]; since: number }[] {
    clearInterval(this.watchdogTimer);
    for (const r of this.readers) {
      // Not a plain disconnect(): a connection between reconnects would never settle its read, and the read loop,
      // which close() waits for, would wait for it forever (connection.ts, disconnectNow).
      if (r.conn !== undefined) disconnectNow(r.conn);
      r.conn = undefined;
    }
    return this.readers.map((r) => ({ streams: r.streams, since: r.readSince }));
  }

  private openOne(): Promise<Client> {
    return this.ctx.connector.open('read', this.connectionError);
  }

  /**
   * Opens a read connection, or gives up at close(): opening a connection can take up to commandTimeoutMs
   * (a Cluster client whose ready check goes to a stalled master), and close() waits for the read loops.
   */
  async openUnlessClosed(): Promise<Client | undefined> {
    const client = this.ctx.connector.create('read');
    client.on('error', this.connectionError);
    const opening = this.ctx.connector.connect(client).then(() => client);
    const conn = await Promise.race([opening, this.ctx.closeSignal.then(() => undefined)]);
    if (conn !== undefined && !this.ctx.closing) return conn;
    // Given up: the connect ends with the disconnect; should it have completed anyway, close what it opened.
    opening.then((c) => c.disconnect(), noop);
    client.disconnect();
    return undefined;
  }

  /**
   * A blocking XREADGROUP of new entries (`>`) on every stream of `r`, COUNT sized to the prefetch room. Its
   * request bytes depend only on the COUNT (group, consumer, BLOCK and streams are the reader's for good), so
   * they are made once per COUNT and kept on the reader.
   */
  readNew(r: Reader): Promise<ReadReply> {
    const room = this.deliveries.prefetch - this.deliveries.heldEvents;
    const count = Math.max(1, Math.min(this.ctx.opts.readCount, Math.floor(room / this.deliveries.avgEvents)));
    let bytes = r.newReads.get(count);
    if (bytes === undefined) {
      const all = r.streams.map((_, k) => k);
      bytes = encodeCommand('xreadgroup', [...this.readHead(count), 'BLOCK', this.ctx.opts.blockMs, ...this.streamArgs(r, all, () => '>')]);
      r.newReads.set(count, bytes);
    }
    // ioredis finds the slot from the first key after STREAMS (a reader's streams share one).
    r.newRoute ??= ['GROUP', this.ctx.spec.group, this.ctx.spec.consumer, 'STREAMS', this.ctx.streams[r.streams[0]!]!.key, '>'];
    return this.issue(r, rawCommand('xreadgroup', bytes, r.newRoute), count, true);
  }

  /**
   * A non-blocking XREADGROUP of one entry per stream of this consumer's own pending entries, after `ids` (per
   * position in `r.streams`), on the streams at positions `only` (the serial pending drain).
   */
  readPending(r: Reader, ids: readonly string[], only: readonly number[]): Promise<ReadReply> {
    return this.issue(r, wireCommand('xreadgroup', [...this.readHead(1), ...this.streamArgs(r, only, (k) => ids[k]!)]), 1, false);
  }

  private readHead(count: number): (string | number)[] {
    return ['GROUP', this.ctx.spec.group, this.ctx.spec.consumer, 'COUNT', count];
  }

  /** `STREAMS`, the keys of the streams at positions `only` of `r.streams`, then the id to read after on each. */
  private streamArgs(r: Reader, only: readonly number[], idAt: (k: number) => string): string[] {
    return ['STREAMS', ...only.map((k) => this.ctx.streams[r.streams[k]!]!.key), ...only.map(idAt)];
  }

  /** Sends read `cmd` on the reader's connection; `watch` replaces the connection if the reply never comes. */
  private issue(r: Reader, cmd: Command, count: number, block: boolean): Promise<ReadReply> {
    const conn = r.conn!;
    r.reading = cmd;
    r.lastCount = count;
    r.readSince = Date.now();
    r.readDeadline = r.readSince + (block ? this.ctx.opts.blockMs : 0) + this.ctx.opts.watchdogMs;
    // Acks waiting for this reader's streams go first on the same connection, in the same write, where the
    // socket can be corked (a standalone client); otherwise they go on the command connection at the end of the turn.
    const socket = block && this.acks.scheduled ? corkable(conn) : undefined;
    let p: Promise<ReadReply>;
    if (socket !== undefined) {
      socket.cork();
      try {
        for (const i of r.streams) this.acks.send(this.ctx.streams[i]!, conn);
        p = send<ReadReply>(conn, cmd);
      } finally {
        socket.uncork();
      }
    } else {
      p = send<ReadReply>(conn, cmd);
    }
    // Settled is not outstanding, whether or not the read loop has taken the reply yet.
    const settled = (): void => {
      if (r.reading === cmd) r.reading = undefined;
    };
    p.then(settled, settled);
    return p;
  }

  private watchEveryMs(): number {
    return Math.max(50, Math.min(1000, Math.floor(this.ctx.opts.watchdogMs / 4)));
  }

  /**
   * The read watchdog (on an interval, not a timer per read): a read outstanding past its deadline
   * (half-open connection, lost reconnect) is failed and its connection dropped; the read loop opens
   * a new one and goes back to draining its pending entries.
   */
  private watch(): void {
    const now = Date.now();
    // A late turn means the event loop was held (synchronous handlers, a long GC pause): a reply that came
    // meanwhile is still unread in the socket (timers run before I/O). The next turn judges, after the I/O.
    const late = now - this.lastWatch > 2 * this.watchEveryMs();
    this.lastWatch = now;
    if (late) return;
    for (const r of this.readers) {
      const cmd = r.reading;
      if (cmd === undefined || now < r.readDeadline || this.ctx.closing) continue;
      this.ctx.logger.warn({ group: this.ctx.spec.group, ms: now - r.readSince }, 'blocking read outlived its watchdog; replacing the connection');
      r.reading = undefined;
      const old = r.conn;
      r.conn = undefined;
      // The acks corked ahead of the read must settle too, also when the connection is between reconnects
      // (disconnectNow): left pending, they would hold the ack batcher's drain, and so close(), forever.
      if (old !== undefined) disconnectNow(old);
      cmd.reject(new Error('read watchdog fired'));
    }
  }
}
