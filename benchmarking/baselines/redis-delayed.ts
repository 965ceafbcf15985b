/**
 * Hand-written ioredis baseline of delayed delivery (the delayed-delivery scenario on Redis): the same events,
 * pacing and lateness accounting as the library row, done directly: each event is one ZADD of its JSON
 * (score: due ms) to a sorted set; a mover loop runs a Lua script that XADDs the due members to a stream and
 * ZREMs them, sleeping until the next due time (at most 50 ms); a consumer reads the stream with XREADGROUP
 * COUNT 1000 BLOCK and XACKs each read.
 */
import type { Redis } from 'ioredis';
import { LatencyRecorder, openLoop } from '../lib/latency.js';
import { DeliveryTracker, tradePayloads } from '../lib/payload.js';
import type { Measured, RunContext } from '../lib/types.js';
import { DELAY_MS, scheduleThroughput, wallMs } from '../scenarios/delayed-delivery.js';
import { dataField, open, streamKey } from './redis.js';

const MOVE = `
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local due = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', now, 'LIMIT', 0, 1000)
for i = 1, #due do redis.call('XADD', KEYS[2], '*', 'd', due[i]) end
if #due > 0 then redis.call('ZREM', KEYS[1], unpack(due)) end
local nxt = redis.call('ZRANGE', KEYS[1], 0, 0, 'WITHSCORES')
return { #due, tonumber(nxt[2] or '-1'), now }`;

/** The mover: one script per pass, then a sleep until the next due time, at most 50 ms. */
async function moveLoop(r: Redis, zset: string, stream: string, stopped: () => boolean): Promise<void> {
  while (!stopped()) {
    const [moved, next, now] = (await r.eval(MOVE, 2, zset, stream)) as [number, number, number];
    const wait = moved >= 1000 ? 0 : next < 0 ? 50 : Math.min(50, Math.max(0, next - now));
    await new Promise((res) => setTimeout(res, wait));
  }
}

type ReadReply = [string, [string, string[]][]][] | null;

async function readLoop(r: Redis, stream: string, deliver: (id: number) => void, stopped: () => boolean): Promise<void> {
  while (!stopped()) {
    const reply = (await r.xreadgroup('GROUP', 'g', 'c', 'COUNT', 1000, 'BLOCK', 200, 'STREAMS', stream, '>')) as ReadReply;
    const entries = reply?.[0]?.[1];
    if (!entries) continue;
    for (const [, fields] of entries) deliver((JSON.parse(dataField(fields)) as { id: number }).id);
    void r.xack(stream, 'g', ...entries.map(([id]) => id)).catch(() => undefined);
  }
}

export async function redisDelayed(ctx: RunContext): Promise<Measured> {
  const n = ctx.config.messageCount;
  const stream = streamKey(ctx);
  const zset = `${stream}:delayed`;
  const [pub, mover, reader] = await Promise.all([open(ctx), open(ctx), open(ctx)]);
  let stop = false;
  const stopped = () => stop;
  try {
    await reader.xgroup('CREATE', stream, 'g', '$', 'MKSTREAM');
    const due = new Float64Array(n);
    const latency = new LatencyRecorder();
    const tracker = new DeliveryTracker(n);
    let early = 0;
    const reading = readLoop(
      reader,
      stream,
      (id) => {
        const late = wallMs() - due[id]!;
        if (late < 0) early++;
        latency.recordMs(late);
        tracker.mark(id);
      },
      stopped,
    );
    const moving = moveLoop(mover, zset, stream, stopped);
    const payloads = tradePayloads(n);
    await ctx.timed(async () => {
      await openLoop(n, ctx.config.rate, (i, intended) => {
        const at = performance.timeOrigin + intended + DELAY_MS;
        due[i] = at;
        void pub.zadd(zset, Math.ceil(at), JSON.stringify(payloads[i]));
      });
      await tracker.waitAll(DELAY_MS + 10_000);
    });
    const schedulePerSec = await scheduleThroughput(n, (p, at) => pub.zadd(`${zset}:far`, at, JSON.stringify(p)), payloads);
    stop = true;
    await Promise.allSettled([moving, reading]);
    return tracker.measured(n, { latency: latency.summary('open'), extra: { early, schedulePerSec } });
  } finally {
    stop = true;
    for (const r of [pub, mover, reader]) r.disconnect();
  }
}
