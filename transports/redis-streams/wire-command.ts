/**
 * The hot commands (XADD, XREADGROUP, XACK) as ioredis `Command`s whose request bytes are written
 * into one Buffer, instead of ioredis's per-argument string concatenation (a dozen cons strings per
 * argument, flattened and transcoded again by the socket write). Replies, queues, reconnects and
 * cluster routing stay ioredis's: only `toWritable` differs.
 */
import { Command, type ChainableCommander } from 'ioredis';
import type { Client } from './connection.js';

/** Buffer's long-standing direct writers (skip `write`'s argument juggling). */
interface DirectWrite {
  utf8Write(s: string, offset: number, length: number): number;
  latin1Write(s: string, offset: number, length: number): number;
}

/** Byte lengths of the current command's arguments (reused; encoding is synchronous). */
let lens = new Int32Array(64);

function digits(n: number): number {
  let d = 1;
  while (n >= 10) {
    n = Math.floor(n / 10);
    d++;
  }
  return d;
}

/** Writes `n` (>= 0) in decimal at `off`, then CRLF; returns the offset after it. */
function writeLength(buf: Buffer, off: number, n: number): number {
  const end = off + digits(n);
  for (let p = end - 1; p >= off; p--) {
    buf[p] = 48 + (n % 10);
    n = Math.floor(n / 10);
  }
  buf[end] = 13;
  buf[end + 1] = 10;
  return end + 2;
}

/** A command argument: numbers are sent as their decimal text, as ioredis does. */
export type WireArg = string | number | Buffer;

/** RESP request bytes: `*<n+1>` then `$<len>` + bytes for the name and each argument. */
export function encodeCommand(name: string, args: readonly WireArg[]): Buffer {
  const n = args.length;
  if (lens.length < n) lens = new Int32Array(Math.max(n, lens.length * 2));
  let size = 1 + digits(n + 1) + 2 + 1 + digits(name.length) + 2 + name.length + 2;
  for (let i = 0; i < n; i++) {
    const a = args[i]!;
    const len = typeof a === 'string' ? Buffer.byteLength(a) : typeof a === 'number' ? String(a).length : a.length;
    lens[i] = len;
    size += 1 + digits(len) + 2 + len + 2;
  }
  const buf = Buffer.allocUnsafe(size);
  const w = buf as unknown as DirectWrite;
  buf[0] = 0x2a; // *
  let off = writeLength(buf, 1, n + 1);
  buf[off++] = 0x24; // $
  off = writeLength(buf, off, name.length);
  off += w.latin1Write(name, off, name.length);
  buf[off++] = 13;
  buf[off++] = 10;
  for (let i = 0; i < n; i++) {
    const a = args[i]!;
    const len = lens[i]!;
    buf[off++] = 0x24;
    off = writeLength(buf, off, len);
    if (typeof a === 'string') w.utf8Write(a, off, len);
    else if (typeof a === 'number') w.latin1Write(String(a), off, len);
    else buf.set(a, off);
    off += len;
    buf[off++] = 13;
    buf[off++] = 10;
  }
  return buf;
}

/**
 * A command whose request bytes were encoded when it was made (so the caller's argument array may be
 * reused at once). ioredis sees only `route`, the arguments it needs to find the keys (cluster slot).
 * With a client-side `keyPrefix` the bytes are encoded from ioredis's prefixed arguments instead.
 */
class WireCommand extends Command {
  private readonly bytes: Buffer | undefined;
  constructor(name: string, args: readonly WireArg[], route: readonly WireArg[], keyPrefix: string | undefined) {
    super(name, (keyPrefix ? args : route) as string[], keyPrefix ? { keyPrefix, replyEncoding: 'utf8' } : { replyEncoding: 'utf8' });
    this.bytes = keyPrefix ? undefined : encodeCommand(name, args);
  }

  override toWritable(): Buffer {
    return this.bytes ?? encodeCommand(this.name, this.args as WireArg[]);
  }
}

function keyPrefixOf(target: Client | ChainableCommander): string | undefined {
  return (target as { options?: { keyPrefix?: string } }).options?.keyPrefix || undefined;
}

/** A command for `target`; `route` defaults to all of `args` (pass `[key]` when the key comes first). */
export function wireCommand(target: Client | ChainableCommander, name: string, args: readonly WireArg[], route: readonly WireArg[] = args): Command {
  return new WireCommand(name, args, route, keyPrefixOf(target));
}

/** Sends a command made by `wireCommand`; the reply decodes as with ioredis's own `client[name](...args)`. */
export function send<T>(client: Client, cmd: Command): Promise<T> {
  void (client as unknown as { sendCommand(c: Command): unknown }).sendCommand(cmd);
  return cmd.promise as Promise<T>;
}

/** `send(client, wireCommand(client, name, args, route))`. */
export function sendWire<T>(client: Client, name: string, args: readonly WireArg[], route?: readonly WireArg[]): Promise<T> {
  return send<T>(client, wireCommand(client, name, args, route));
}

/** Queues a command on a pipeline (its reply comes with the pipeline's `exec`). */
export function queueWire(pipe: ChainableCommander, name: string, args: readonly WireArg[], route?: readonly WireArg[]): void {
  (pipe as unknown as { sendCommand(c: Command): unknown }).sendCommand(wireCommand(pipe, name, args, route));
}
