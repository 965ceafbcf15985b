/**
 * Hand-written ioredis baseline of end-to-end latency (the end-to-end scenario on Redis): the same
 * events, pacing, warm-up and accounting as the library row (`mainThreadLatency`), but published with one
 * XADD per event of the entries eventlane writes per event, and read by a plain XREADGROUP loop per
 * consumer on its own connection that JSON-parses each entry's `data` and acks each read with one XACK.
 */
import type { Redis } from 'ioredis';
import { mainThreadLatency, type LatencyPath } from '../lib/latency-run.js';
import type { Measured, RunContext } from '../lib/types.js';
import { dataField, eventArgs, open, streamKey, type Xadd } from './redis.js';

const GROUP = 'g';
/** Finite, as the library's (its default `blockMs`); close ends a blocked read by disconnecting. */
const BLOCK_MS = 2000;

type ReadReply = [string, [string, string[]][]][] | null;

/** One consumer on its own connection: read up to 1,000 entries, handle each, ack them all, read again. */
class ReadLoop {
  private stopped = false;
  private lastAck: Promise<unknown> = Promise.resolve();
  failedAcks = 0;
  error: string | undefined;
  readonly done: Promise<void>;

  constructor(
    private readonly r: Redis,
    private readonly key: string,
    private readonly consumer: string,
    private readonly deliver: (id: number) => void,
  ) {
    this.done = this.run();
  }

  private async run(): Promise<void> {
    const { r, key } = this;
    while (!this.stopped) {
      let reply: ReadReply;
      try {
        reply = (await r.xreadgroup('GROUP', GROUP, this.consumer, 'COUNT', 1000, 'BLOCK', BLOCK_MS, 'STREAMS', key, '>')) as ReadReply;
      } catch (err) {
        if (!this.stopped) this.error = err instanceof Error ? err.message : String(err);
        return;
      }
      const entries = reply?.[0]?.[1];
      if (!entries) continue;
      const ids = new Array<string>(entries.length);
      for (let i = 0; i < entries.length; i++) {
        const [id, fields] = entries[i]!;
        ids[i] = id;
        this.deliver((JSON.parse(dataField(fields)) as { id: number }).id);
      }
      // Not awaited: it goes out ahead of the next read on this connection, as the library acks ahead of a
      // reader's next read, so acking costs no extra round trip before the next events are read.
      this.lastAck = r.xack(key, GROUP, ...ids).catch(() => {
        this.failedAcks++;
      });
    }
  }

  /** Lets the last ack settle, then ends the blocked read by disconnecting. */
  async stop(): Promise<void> {
    this.stopped = true;
    await this.lastAck;
    this.r.disconnect();
    await this.done;
  }
}

/** publish() -> handler start, done by hand: XADD per event -> XREADGROUP COUNT 1000 BLOCK -> JSON.parse(data). */
export async function redisEndToEnd(ctx: RunContext): Promise<Measured> {
  const key = streamKey(ctx);
  const conns: Redis[] = [];
  const loops: ReadLoop[] = [];
  let xadd: Xadd | undefined;
  const path: LatencyPath = {
    sends: 'XADD',
    async subscribe(deliver) {
      const pub = await open(ctx);
      conns.push(pub);
      await pub.xgroup('CREATE', key, GROUP, '$', 'MKSTREAM');
      for (let k = 0; k < ctx.config.consumers; k++) {
        const r = await open(ctx);
        conns.push(r);
        loops.push(new ReadLoop(r, key, `c${k}`, deliver));
      }
      xadd = pub.xadd.bind(pub) as unknown as Xadd;
    },
    send: (payload, i) => xadd!(...eventArgs(key, payload, i, true)),
    notes() {
      const out: string[] = [];
      for (const l of loops) {
        if (l.error) out.push(`XREADGROUP failed: ${l.error}`);
        if (l.failedAcks) out.push(`${l.failedAcks} XACK calls failed`);
      }
      return out;
    },
    async close() {
      await Promise.all(loops.map((l) => l.stop()));
      for (const c of conns) c.disconnect();
    },
  };
  return mainThreadLatency(ctx, { payload: 'sized', open: true }, path);
}
