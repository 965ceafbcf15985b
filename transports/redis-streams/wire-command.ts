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

/**
 * RESP request bytes: `*<n+1>` then `$<len>` + bytes for the name and each argument. Arguments are
 * strings or Buffers (ioredis turned numbers into strings before asking for the bytes).
 */
export function encodeCommand(name: string, args: readonly unknown[]): Buffer {
  const n = args.length;
  if (lens.length < n) lens = new Int32Array(Math.max(n, lens.length * 2));
  let size = 1 + digits(n + 1) + 2 + 1 + digits(name.length) + 2 + name.length + 2;
  for (let i = 0; i < n; i++) {
    const a = args[i];
    const len = typeof a === 'string' ? Buffer.byteLength(a) : (a as Buffer).length;
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
    const a = args[i];
    const len = lens[i]!;
    buf[off++] = 0x24;
    off = writeLength(buf, off, len);
    if (typeof a === 'string') w.utf8Write(a, off, len);
    else buf.set(a as Buffer, off);
    off += len;
    buf[off++] = 13;
    buf[off++] = 10;
  }
  return buf;
}

class WireCommand extends Command {
  override toWritable(): Buffer {
    return encodeCommand(this.name, this.args);
  }
}

/** What ioredis's own command methods pass along from the client's options. */
function commandOptions(target: Client | ChainableCommander): { keyPrefix?: string; replyEncoding: 'utf8' } {
  const keyPrefix = (target as { options?: { keyPrefix?: string } }).options?.keyPrefix;
  return keyPrefix ? { keyPrefix, replyEncoding: 'utf8' } : { replyEncoding: 'utf8' };
}

function wire(target: Client | ChainableCommander, name: string, args: unknown[]): Command {
  return new WireCommand(name, args as string[], commandOptions(target));
}

/** Sends `name args` on a client; the reply decodes as with ioredis's own `client[name](...args)`. */
export function sendWire<T>(client: Client, name: string, args: unknown[]): Promise<T> {
  const cmd = wire(client, name, args);
  void (client as unknown as { sendCommand(c: Command): unknown }).sendCommand(cmd);
  return cmd.promise as Promise<T>;
}

/** Queues `name args` on a pipeline (its reply comes with the pipeline's `exec`). */
export function queueWire(pipe: ChainableCommander, name: string, args: unknown[]): void {
  (pipe as unknown as { sendCommand(c: Command): unknown }).sendCommand(wire(pipe, name, args));
}
