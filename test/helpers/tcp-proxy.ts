/**
 * A loopback TCP proxy in front of a real server, for faults no server command can make: it can hold what
 * chosen connections send (their commands reach the server only when released), while the others flow.
 * A connection is chosen by what it has sent so far (ioredis names its connections with CLIENT SETNAME
 * first thing, so `/eventlane:command:/` picks a transport's command connection).
 */
import { createServer, connect, type Server, type Socket } from 'node:net';

class Link {
  /** What the client sent so far, as text (for matching). */
  sent = '';
  /** Bytes held back while this link is held, in order. */
  readonly held: Buffer[] = [];
  holding = false;
  /** Set by `cutAfterOneReply`: forward the server's next reply alone, then drop the connection. */
  cutting = false;
  /** Set by `holdReplies`: what the server sends is kept here, never forwarded (the client waits on it). */
  heldReplies: Buffer[] | undefined;
  constructor(
    readonly client: Socket,
    readonly upstream: Socket,
  ) {}

  release(): void {
    this.holding = false;
    for (const b of this.held.splice(0)) this.upstream.write(b);
  }
}

export class TcpProxy {
  private readonly links = new Set<Link>();
  private holdPattern: RegExp | undefined;

  private constructor(
    private readonly server: Server,
    readonly port: number,
  ) {}

  static async start(targetPort: number, host = '127.0.0.1'): Promise<TcpProxy> {
    const proxy: { p?: TcpProxy } = {};
    const server = createServer((client) => proxy.p!.accept(client, targetPort, host));
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const port = (server.address() as { port: number }).port;
    proxy.p = new TcpProxy(server, port);
    return proxy.p;
  }

  get url(): string {
    return `redis://127.0.0.1:${this.port}`;
  }

  private accept(client: Socket, port: number, host: string): void {
    const upstream = connect(port, host);
    const link = new Link(client, upstream);
    this.links.add(link);
    client.on('data', (b: Buffer) => {
      if (link.sent.length < 4096) link.sent += b.toString('latin1');
      if (!link.holding && this.holdPattern?.test(link.sent)) link.holding = true;
      if (link.holding) link.held.push(b);
      else upstream.write(b);
    });
    upstream.on('data', (b: Buffer) => {
      if (link.heldReplies !== undefined) {
        link.heldReplies.push(b);
        return;
      }
      if (!link.cutting) {
        client.write(b);
        return;
      }
      client.write(b.subarray(0, firstReplyEnd(b)), () => {
        client.destroy();
        upstream.destroy();
      });
    });
    const end = () => {
      this.links.delete(link);
      client.destroy();
      upstream.destroy();
    };
    client.on('close', end);
    upstream.on('close', end);
    client.on('error', end);
    upstream.on('error', end);
  }

  /** From now on, what connections whose traffic matches `pattern` send is held until `release()`. */
  hold(pattern: RegExp): void {
    this.holdPattern = pattern;
    for (const l of this.links) if (pattern.test(l.sent)) l.holding = true;
  }

  /**
   * The next time a connection whose traffic matches `pattern` receives replies, only the first reply
   * (a simple string, error, integer or bulk string) reaches the client, and the connection is dropped:
   * the server executed what the client sent, the client saw one reply.
   */
  cutAfterOneReply(pattern: RegExp): void {
    for (const l of this.links) if (pattern.test(l.sent)) l.cutting = true;
  }

  /**
   * From now on, replies to connections whose traffic matches `pattern` are kept from them: the server executes
   * what they send (a blocking read delivers its entries) and the client never hears of it.
   */
  holdReplies(pattern: RegExp): void {
    for (const l of this.links) if (pattern.test(l.sent)) l.heldReplies ??= [];
  }

  /** What the connections whose traffic matches `pattern` have sent so far (the first 4 KiB of each), as text. */
  sentText(pattern: RegExp): string {
    let t = '';
    for (const l of this.links) if (pattern.test(l.sent)) t += l.sent;
    return t;
  }

  /** Replies held by `holdReplies` so far, as text. */
  get heldReplyText(): string {
    let t = '';
    for (const l of this.links) for (const b of l.heldReplies ?? []) t += b.toString('latin1');
    return t;
  }

  /** Stops holding: what was held goes to the server, in order. */
  release(): void {
    this.holdPattern = undefined;
    for (const l of this.links) l.release();
  }

  /** What is held back now, over all connections, as text (RESP: command names in lower case as ioredis sends them). */
  get heldText(): string {
    let t = '';
    for (const l of this.links) for (const b of l.held) t += b.toString('latin1');
    return t;
  }

  async stop(): Promise<void> {
    for (const l of this.links) {
      l.client.destroy();
      l.upstream.destroy();
    }
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }
}

/** End of the first RESP reply in `b` (one of `+ - : $`), or `b.length` when it is not whole in `b`. */
function firstReplyEnd(b: Buffer): number {
  const line = b.indexOf('\r\n');
  if (line < 0) return b.length;
  if (b[0] !== 0x24 /* $ */) return line + 2;
  const len = Number(b.subarray(1, line).toString('latin1'));
  return len < 0 ? line + 2 : Math.min(b.length, line + 2 + len + 2);
}
