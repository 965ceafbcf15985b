/**
 * Hand-written ioredis baselines: the same work as a Redis scenario, done directly. They are what a
 * careful engineer would write without the library, so "ours / baseline" shows the library's cost.
 * Payload objects are generated before the timed window; JSON encoding is inside it, as for the library.
 */
import type { Redis } from 'ioredis';
import { connect } from '../lib/redis.js';
import type { Measured, RunContext } from '../lib/types.js';
import { sizedPayloads } from '../lib/payload.js';

/** A fail-fast connection to the run's Redis, connected. */
export async function open(ctx: RunContext, extra: Record<string, unknown> = {}): Promise<Redis> {
  const r = connect(ctx.config.redisUrl, extra);
  r.on('error', () => {});
  await r.connect();
  return r;
}

/** The baseline's stream: under the iteration's key prefix, so it is deleted with the iteration's keys. */
export const streamKey = (ctx: RunContext) => `${ctx.config.keyPrefix}baseline:${ctx.iteration}`;

/** Counts the events stored in a baseline stream (entries hold one event or a JSON array of events). */
async function countStored(r: Redis, key: string): Promise<{ received: number; unique: number }> {
  const seen = new Set<number>();
  let received = 0;
  let start = '-';
  for (;;) {
    const page = await r.xrange(key, start, '+', 'COUNT', 1000);
    for (const [, fields] of page) {
      const v = JSON.parse(dataField(fields)) as { id: number } | { id: number }[];
      for (const e of Array.isArray(v) ? v : [v]) {
        received++;
        seen.add(e.id);
      }
    }
    if (page.length < 1000) break;
    start = `(${page[page.length - 1]![0]}`;
  }
  return { received, unique: seen.size };
}

/** The figures of a publish run whose `n` events are read back from the stream at `key` (XRANGE). */
export async function verified(r: Redis, key: string, n: number, size: number, how: string): Promise<Measured> {
  const c = await countStored(r, key);
  return { events: n, sent: n, received: c.received, unique: c.unique, bytes: n * size, verifiedBy: `${how}; XRANGE read-back of the stream` };
}

/**
 * One publish baseline: payloads made before the window, `send` timed, then every event read back.
 * `how` names the baseline in the verification note.
 */
async function publishBaseline(
  ctx: RunContext,
  how: string,
  send: (r: Redis, key: string, payloads: ReturnType<typeof sizedPayloads>) => Promise<void>,
  redisOptions: Record<string, unknown> = {},
): Promise<Measured> {
  const { messageCount: n, messageSize: size } = ctx.config;
  const payloads = sizedPayloads(n, size);
  const r = await open(ctx, redisOptions);
  const key = streamKey(ctx);
  try {
    await ctx.timed(() => send(r, key, payloads));
    if (ctx.warmup) return { events: n, sent: n, received: null, bytes: n * size, verifiedBy: `${how}; warmup, not read back` };
    return await verified(r, key, n, size, how);
  } finally {
    r.disconnect();
  }
}

/** JSON-encode arrays of `batch` events and XADD each as one entry, all in one pipeline. */
export function pipelinedArrays(ctx: RunContext, batch: number): Promise<Measured> {
  return publishBaseline(ctx, `pipelined XADD of ${batch}-event JSON arrays`, async (r, key, payloads) => {
    const p = r.pipeline();
    for (let i = 0; i < payloads.length; i += batch) p.xadd(key, '*', 'd', JSON.stringify(payloads.slice(i, i + batch)));
    const res = await p.exec();
    const failed = res?.find(([err]) => err);
    if (failed) throw failed[0];
  });
}

/** The JSON of an entry's `data` field (envelope entries), or of its first field (one-field entries). */
export function dataField(fields: string[]): string {
  for (let f = 0; f + 1 < fields.length; f += 2) if (fields[f] === 'data') return fields[f + 1]!;
  return fields[1]!;
}

/**
 * The XADD arguments of one event. `envelope` (variant param `entries: 'envelope'`) writes what
 * eventlane's per-event entries hold (docs/wire-format.md: v, kind, id, type, source, time, data) with the
 * library's default trimming (`MAXLEN ~ 1000000`), so the loop does the same work as the library;
 * otherwise a single `d` field.
 */
export function eventArgs(key: string, payload: unknown, i: number, envelope: boolean): (string | number)[] {
  const data = JSON.stringify(payload);
  if (!envelope) return [key, '*', 'd', data];
  return [key, 'MAXLEN', '~', 1_000_000, '*', 'v', '1', 'kind', 'event', 'id', `baseline-${i}`, 'type', 'bench.sized', 'source', 'baseline', 'time', Date.now(), 'data', data];
}

const envelopeEntries = (ctx: RunContext) => ctx.variant.params['entries'] === 'envelope';

export type Xadd = (...args: (string | number)[]) => Promise<unknown>;

/** One publisher awaiting one XADD per event. */
export function awaitedXadd(ctx: RunContext): Promise<Measured> {
  const envelope = envelopeEntries(ctx);
  return publishBaseline(ctx, 'awaited XADD per event', async (r, key, payloads) => {
    const xadd = r.xadd.bind(r) as unknown as Xadd;
    for (let i = 0; i < payloads.length; i++) await xadd(...eventArgs(key, payloads[i], i, envelope));
  });
}

/** `publishers` concurrent loops, each awaiting its XADD, on one auto-pipelined connection. */
export function autoPipelinedXadd(ctx: RunContext): Promise<Measured> {
  const { publishers } = ctx.config;
  const envelope = envelopeEntries(ctx);
  return publishBaseline(
    ctx,
    `auto-pipelined XADD, ${publishers} concurrent publishers`,
    async (r, key, payloads) => {
      const xadd = r.xadd.bind(r) as unknown as Xadd;
      const n = payloads.length;
      const per = Math.ceil(n / publishers);
      await Promise.all(
        Array.from({ length: publishers }, async (_, p) => {
          for (let i = p * per; i < Math.min(n, (p + 1) * per); i++) await xadd(...eventArgs(key, payloads[i], i, envelope));
        }),
      );
    },
    { enableAutoPipelining: true },
  );
}

type GroupEntry = [id: string, fields: string[]];

/**
 * Decodes one XREADGROUP batch inside readGroupAck's timed loop: writes each entry's id to `ids[i]`, JSON-decodes
 * its data (the `data` field of an envelope entry, the one field of a minimal one) and marks the event's id in
 * `seen`. Returns how many of the batch's event ids were not seen before. Every entry is decoded; a bad entry throws.
 */
function decodeBatch(entries: GroupEntry[], envelope: boolean, seen: Uint8Array, ids: string[]): number {
  let fresh = 0;
  for (let i = 0; i < entries.length; i++) {
    const [id, fields] = entries[i]!;
    ids[i] = id;
    let data = fields[1]!;
    if (envelope) for (let f = 0; f < fields.length; f += 2) if (fields[f] === 'data') data = fields[f + 1]!;
    const e = JSON.parse(data) as { id: number };
    if (seen[e.id] === 0) {
      seen[e.id] = 1;
      fresh++;
    }
  }
  return fresh;
}

/**
 * Pre-fills a stream with one entry per event (untimed), then times XREADGROUP COUNT 1000 + XACK until
 * all are read, JSON-decoding each event's data. `entries: 'envelope'` writes the same per-event entries
 * eventlane's `entryMode: 'event'` writes (docs/wire-format.md: v, kind, id, type, source, time, data),
 * so the loop reads exactly what the library reads; `'minimal'` writes a single `d` field per entry.
 */
export async function readGroupAck(ctx: RunContext): Promise<Measured> {
  const { messageCount: n, messageSize: size } = ctx.config;
  const envelope = envelopeEntries(ctx);
  const payloads = sizedPayloads(n, size);
  const r = await open(ctx);
  const key = streamKey(ctx);
  try {
    const now = Date.now();
    for (let i = 0; i < n; i += 5000) {
      const p = r.pipeline();
      for (let j = i; j < Math.min(n, i + 5000); j++) {
        const data = JSON.stringify(payloads[j]);
        if (envelope) p.xadd(key, '*', 'v', '1', 'kind', 'event', 'id', `baseline-${j}`, 'type', 'bench.sized', 'source', 'baseline', 'time', now, 'data', data);
        else p.xadd(key, '*', 'd', data);
      }
      await p.exec();
    }
    await r.xgroup('CREATE', key, 'g', '0');
    const seen = new Uint8Array(n);
    let received = 0;
    let unique = 0;
    await ctx.timed(async () => {
      while (received < n) {
        const res = (await r.xreadgroup('GROUP', 'g', 'c1', 'COUNT', 1000, 'STREAMS', key, '>')) as [string, GroupEntry[]][] | null;
        const entries = res?.[0]?.[1] ?? [];
        if (entries.length === 0) break;
        const ids: string[] = new Array(entries.length);
        unique += decodeBatch(entries, envelope, seen, ids);
        received += entries.length;
        await r.xack(key, 'g', ...ids);
      }
    });
    return { events: received, sent: n, received, unique, bytes: n * size, verifiedBy: 'events decoded by the XREADGROUP loop' };
  } finally {
    r.disconnect();
  }
}
