/**
 * The hot commands (XADD, XREADGROUP, XACK) as ioredis `Command`s whose request bytes are written
 * into one Buffer when the command is made, instead of ioredis's per-argument string concatenation
 * (a dozen cons strings per argument, flattened and transcoded again by the socket write). ioredis
 * sees only the arguments it needs to find the key (cluster slot); replies, queues, reconnects and
 * cluster routing stay ioredis's. (A client-side `redisOptions.keyPrefix` is refused by the config:
 * the bytes would not carry it.)
 */
import { Command, type ChainableCommander } from 'ioredis';
import type { DirectBuffer } from '../../src/json-writer.js';
import type { Client } from './connection.js';

/** A command argument: numbers are sent as their decimal text, as ioredis does (converted twice here: pass text on hot paths). */
export type WireArg = string | number | Buffer;

export function digits(n: number): number {
  let d = 1;
  while (n >= 10) {
    n = Math.floor(n / 10);
    d++;
  }
  return d;
}

/** Byte length of an argument's content. */
export function argBytes(a: WireArg): number {
  return typeof a === 'string' ? Buffer.byteLength(a) : typeof a === 'number' ? String(a).length : a.length;
}

/** Bytes of an argument as a RESP bulk string: `$<len>\r\n<content>\r\n`. */
export function bulkBytes(len: number): number {
  return 1 + digits(len) + 2 + len + 2;
}

/**
 * Appends RESP to a growing buffer. `reserve` makes room; writes assume it was made. Bytes before
 * `off` are kept when the buffer grows.
 */
export class RespWriter {
  buf: Buffer;
  off = 0;

  constructor(size: number) {
    this.buf = Buffer.allocUnsafe(Math.max(64, size));
  }

  reserve(extra: number): void {
    if (this.off + extra <= this.buf.length) return;
    const next = Buffer.allocUnsafe(Math.max(this.buf.length * 2, this.off + extra));
    this.buf.copy(next, 0, 0, this.off);
    this.buf = next;
  }

  /** `<prefix><n>\r\n` (prefix `*` for an array, `$` for a bulk string header). */
  header(prefix: number, n: number): void {
    const buf = this.buf;
    buf[this.off++] = prefix;
    const end = this.off + digits(n);
    for (let p = end - 1; p >= this.off; p--) {
      buf[p] = 48 + (n % 10);
      n = Math.floor(n / 10);
    }
    buf[end] = 13;
    buf[end + 1] = 10;
    this.off = end + 2;
  }

  crlf(): void {
    this.buf[this.off++] = 13;
    this.buf[this.off++] = 10;
  }

  /** One bulk string of `len` content bytes (`argBytes(a)`). */
  bulk(a: WireArg, len: number): void {
    this.header(0x24, len);
    const w = this.buf as DirectBuffer;
    if (typeof a === 'string') w.utf8Write(a, this.off, len);
    else if (typeof a === 'number') w.latin1Write(String(a), this.off, len);
    else this.buf.set(a, this.off);
    this.off += len;
    this.crlf();
  }
}

/** Byte lengths of the current command's arguments (reused; encoding is synchronous). */
let lens = new Int32Array(64);

/** RESP request bytes: `*<n+1>` then `$<len>` + bytes for the name and each argument. */
export function encodeCommand(name: string, args: readonly WireArg[]): Buffer {
  const n = args.length;
  if (lens.length < n) lens = new Int32Array(Math.max(n, lens.length * 2));
  let size = 1 + digits(n + 1) + 2 + bulkBytes(name.length);
  for (let i = 0; i < n; i++) {
    const len = argBytes(args[i]!);
    lens[i] = len;
    size += bulkBytes(len);
  }
  const w = new RespWriter(size);
  w.header(0x2a, n + 1);
  w.bulk(name, name.length);
  for (let i = 0; i < n; i++) w.bulk(args[i]!, lens[i]!);
  return w.buf.subarray(0, w.off);
}

/**
 * The part of `XACK <key> <group> <id>...` that a stream's acks share: the name, key and group as bulk strings
 * (what follows the array header).
 */
export function xackHead(key: string, group: string): Buffer {
  const full = encodeCommand('xack', [key, group]);
  return full.subarray(1 + digits(3) + 2);
}

/** RESP request bytes of an XACK: the array header, `head` (`xackHead`) and the ids (ASCII, as stream ids are: a byte per character). */
export function encodeXack(head: Buffer, ids: readonly string[]): Buffer {
  const n = ids.length;
  let size = 1 + digits(n + 3) + 2 + head.length;
  for (let i = 0; i < n; i++) size += bulkBytes(ids[i]!.length);
  const w = new RespWriter(size);
  w.header(0x2a, n + 3);
  w.buf.set(head, w.off);
  w.off += head.length;
  for (let i = 0; i < n; i++) w.bulk(ids[i]!, ids[i]!.length);
  return w.buf.subarray(0, w.off);
}

/** A command whose request bytes were made up front; ioredis sees only `route` (to find the key). */
class WireCommand extends Command {
  constructor(
    name: string,
    route: readonly WireArg[],
    private readonly bytes: Buffer,
  ) {
    super(name, route as string[], { replyEncoding: 'utf8' });
  }

  override toWritable(): Buffer {
    return this.bytes;
  }

  /** The node ("host:port") the last ASK or MOVED reply sent this command to, if any (see `redirectedNode`). */
  redirected: string | undefined = undefined;
}

/**
 * ioredis reports a redirect by calling `command.reject` with the `ASK <slot> <host:port>` or
 * `MOVED <slot> <host:port>` reply, and a Cluster client reads the command's `reject` and assigns its own
 * (which then resends the command there) over it. An accessor on the prototype keeps what is assigned and
 * hands out a reject that notes the redirect first: a function is made only when `reject` is read (errors,
 * and a Cluster's sendCommand), not per command sent.
 */
type Reject = (err: Error) => void;
const REJECT = Symbol('reject');
Object.defineProperty(WireCommand.prototype, 'reject', {
  get(this: WireCommand & { [REJECT]: Reject }): Reject {
    const f = this[REJECT];
    return (err: Error) => {
      const msg = err?.message;
      const m = typeof msg === 'string' && (msg.startsWith('ASK ') || msg.startsWith('MOVED ')) ? msg.split(' ') : undefined;
      if (m !== undefined && m.length === 3) this.redirected = m[2];
      f.call(this, err);
    };
  },
  set(this: WireCommand & { [REJECT]: Reject }, f: Reject) {
    this[REJECT] = f;
  },
});

/**
 * Cluster: the node the last ASK or MOVED reply redirected `cmd` to. After an ASK (a key of a slot being
 * migrated that its old master no longer has) ioredis resends the command there without changing its slot
 * map, so a WAIT routed by slot would go to the old master. After a MOVED ioredis does update its map, but a
 * slot-map refresh it starts then can put the old master back for a while (CLUSTER SLOTS from a node that
 * has not heard of the move yet), so the map cannot tell where the command went. Undefined when it was not
 * redirected (or is not ours).
 */
export function redirectedNode(cmd: Command): string | undefined {
  return cmd instanceof WireCommand ? cmd.redirected : undefined;
}

/** Whether `cmd` was made here (the transport's own XADD, WAIT...), not by ioredis or a caller. */
export function isWireCommand(cmd: Command): boolean {
  return cmd instanceof WireCommand;
}

/**
 * `WAIT <replicas> <timeoutMs>`: replies how many replicas acknowledged every write sent before it on
 * its connection. Keyless: in a Cluster the caller names its node (see replica-wait.ts).
 */
export function waitCommand(replicas: number, timeoutMs: number): Command {
  return new WireCommand('wait', [], encodeCommand('wait', [String(replicas), String(timeoutMs)]));
}

/** The Cluster slot of `key`, as ioredis routes a command whose key it is. */
export function slotOf(key: string): number {
  return new Command('exists', [key]).getSlot()!;
}

/**
 * A command from its arguments (encoded now, so the caller may reuse the array); `route` defaults to
 * all of them (pass `[key]` when the key comes first).
 */
export function wireCommand(name: string, args: readonly WireArg[], route: readonly WireArg[] = args): Command {
  return new WireCommand(name, route, encodeCommand(name, args));
}

/** A command from request bytes made elsewhere (`route`: the arguments that locate its key). */
export function rawCommand(name: string, bytes: Buffer, route: readonly WireArg[]): Command {
  return new WireCommand(name, route, bytes);
}

/** Sends a command; the reply decodes as with ioredis's own `client[name](...args)`. */
export function send<T>(client: Client, cmd: Command): Promise<T> {
  void (client as unknown as { sendCommand(c: Command): unknown }).sendCommand(cmd);
  return cmd.promise as Promise<T>;
}

/** `send(client, wireCommand(name, args, route))`. */
export function sendWire<T>(client: Client, name: string, args: readonly WireArg[], route?: readonly WireArg[]): Promise<T> {
  return send<T>(client, wireCommand(name, args, route));
}

/** Queues a command on a pipeline (its reply comes with the pipeline's `exec`). */
export function queue(pipe: ChainableCommander, cmd: Command): void {
  (pipe as unknown as { sendCommand(c: Command): unknown }).sendCommand(cmd);
}
