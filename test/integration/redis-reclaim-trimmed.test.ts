/**
 * Reclaim of entries trimmed while pending, against a real redis-server: the entries claimed alone (XCLAIM,
 * delivered twice or more without an ack) are reported as the bulk XAUTOCLAIM reports its own.
 */
import { describe, expect, it } from 'vitest';
import { createEventBus } from '../../src/index.js';
import { uniquePrefix } from '../helpers/redis-server.js';
import { sleep, waitFor } from '../helpers/wait.js';
import { streamKey } from '../../transports/redis-streams/index.js';
import { events, order, warningLogger, redisForFile } from './redis-common.js';

const r = redisForFile({ external: true });

describe('redis-streams reclaim: entries trimmed while pending', () => {
  it('suspects (delivered twice without an ack) trimmed before the XCLAIM that takes them alone are reported, in one warning per pass', async () => {
    const prefix = uniquePrefix('trimsuspect');
    const key = streamKey(prefix, 'order.created', 0);
    await r.raw.xgroup('CREATE', key, 'g', '0', 'MKSTREAM');
    for (let i = 0; i < 4; i++) await r.raw.xadd(key, '*', 'data', JSON.stringify(order(i)));
    // A consumer read the four entries twice (its own pending drain after a restart) and died with them: suspects.
    await r.raw.xreadgroup('GROUP', 'g', 'dead', 'COUNT', 4, 'STREAMS', key, '>');
    await r.raw.xreadgroup('GROUP', 'g', 'dead', 'COUNT', 4, 'STREAMS', key, '0');
    expect(((await r.raw.xpending(key, 'g', '-', '+', 10)) as [string, string, number, number][]).map((p) => p[3])).toEqual([2, 2, 2, 2]);
    // Retention trims the first three; the last is still there.
    await r.raw.xtrim(key, 'MAXLEN', 1);
    const logger = warningLogger();
    const b = await createEventBus({ service: 'it', events, logger, transport: { type: 'redis-streams', url: r.server.url, prefix, partitions: 1 } });
    r.cleanup.push(() => b.close());
    await sleep(150); // idle past minIdleMs
    const seen: string[] = [];
    await b.subscribe('order.created', { group: 'g', consumer: 'me', blockMs: 100, minIdleMs: 100 }, (e, ctx) => void seen.push(`${e.data.seq}@${ctx.attempt}`));
    const reports = () => logger.warnings.filter((w) => w.msg?.startsWith('pending entries were trimmed'));
    // Redis drops the three from the pending list at the XCLAIM: the loss is reported, not silent.
    await waitFor(() => reports().reduce((n, w) => n + Number(w.obj['count']), 0) === 3, 5000, 'three trimmed pending entries reported');
    expect(reports()).toEqual([{ obj: { group: 'g', stream: key, count: 3 }, msg: expect.stringContaining('lost to the group') }]);
    // The survivor runs, alone, as its third delivery.
    await waitFor(() => seen.length === 1, 5000, 'the surviving entry');
    expect(seen).toEqual(['3@3']);
    await waitFor(async () => ((await r.raw.xpending(key, 'g')) as [number])[0] === 0, 5000, 'nothing pending');
  });
});
