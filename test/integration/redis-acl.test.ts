/**
 * The Redis Streams consumer on a server whose ACL user may not run scripts or XDEL, against a real
 * redis-server: what it cannot do is said once in the log, and the rest keeps working.
 */
import { describe, expect, it } from 'vitest';
import { createEventBus, type EventBus, type Logger } from '../../src/index.js';
import { uniquePrefix } from '../helpers/redis-server.js';
import { sleep, waitFor } from '../helpers/wait.js';
import { retryKey, streamKey } from '../../transports/redis-streams/index.js';
import { events, fastRead, recordingLogger, redisForFile } from './redis-common.js';

const r = redisForFile();

async function bus(prefix: string, transport: Record<string, unknown> = {}, logger?: Logger): Promise<EventBus<typeof events>> {
  const b = await createEventBus({ service: 'review', events, ...(logger ? { logger } : {}), transport: { type: 'redis-streams', url: r.server.url, prefix, partitions: 1, ...transport } });
  r.cleanup.push(() => b.close());
  return b;
}

/** The transport's url, as ACL user `user` with password `pw`. */
function asUser(user: string): { url: string } {
  const url = new URL(r.server.url);
  url.username = user;
  url.password = 'pw';
  return { url: url.toString() };
}

describe('redis-streams consumer: keepalive without scripts', () => {
  it('an ACL user without XDEL: acked retry entries stay in the retry stream with one warning per refused XDEL, and idle() still resolves', async () => {
    await r.raw.call('ACL', 'SETUSER', 'noxdel', 'on', '>pw', '~*', '&*', '+@all', '-xdel');
    r.cleanup.push(() => r.raw.call('ACL', 'DELUSER', 'noxdel'));
    const prefix = uniquePrefix('noxdel');
    const logger = recordingLogger();
    const b = await bus(prefix, asUser('noxdel'), logger);
    const attempts: number[] = [];
    await b.subscribe('order.created', { group: 'g', ...fastRead, retry: { backoff: { initialMs: 10, maxMs: 10 } } }, (_e, ctx) => {
      attempts.push(ctx.attempt);
      if (ctx.attempt === 1) throw new Error('once');
    });
    await b.publish('order.created', { orderId: 'o-1', amount: 1, seq: 1 });
    await b.idle({ timeoutMs: 5000 });
    expect(attempts).toEqual([1, 2]);
    await waitFor(() => logger.messages.includes('XDEL of acked retry entries failed; they stay in the retry stream'), 5000, 'the warning');
    expect(await r.raw.xlen(retryKey(prefix, 'order.created', 0, 'g'))).toBe(1);
  });

  it("an ACL user without +@scripting still keeps a long handler's entry (plain XCLAIM) and is told the owner check is off", async () => {
    await r.raw.call('ACL', 'SETUSER', 'noscripts', 'on', '>pw', '~*', '&*', '+@all', '-@scripting');
    r.cleanup.push(() => r.raw.call('ACL', 'DELUSER', 'noscripts'));
    const prefix = uniquePrefix('noscripts');
    const logger = recordingLogger();
    const slow = await bus(prefix, asUser('noscripts'), logger);
    const opts = { group: 'g', blockMs: 100, minIdleMs: 600 };
    let done = false;
    await slow.subscribe('order.created', { ...opts, consumer: 'slow' }, async () => {
      await sleep(2500); // four times minIdleMs: only the keepalive keeps the entry here
      done = true;
    });
    const other: number[] = [];
    const b = await bus(prefix);
    await b.subscribe('order.created', { ...opts, consumer: 'other' }, (e) => void other.push(e.data.seq));
    await slow.publish('order.created', { orderId: 'o-1', amount: 1, seq: 1 });
    await waitFor(() => done, 10_000, 'the slow handler');
    await sleep(300);
    expect(other).toEqual([]);
    expect(logger.messages.some((m) => m.startsWith('Redis refuses scripts'))).toBe(true);
  });

  it('an ACL user without +@scripting still deletes idle consumers (check and delete as two commands)', async () => {
    await r.raw.call('ACL', 'SETUSER', 'noscripts2', 'on', '>pw', '~*', '&*', '+@all', '-@scripting');
    r.cleanup.push(() => r.raw.call('ACL', 'DELUSER', 'noscripts2'));
    const prefix = uniquePrefix('noscriptsprune');
    const key = streamKey(prefix, 'order.created', 0);
    await r.raw.xgroup('CREATE', key, 'g', '$', 'MKSTREAM');
    await r.raw.xgroup('CREATECONSUMER', key, 'g', 'gone');
    const logger = recordingLogger();
    const b = await bus(prefix, asUser('noscripts2'), logger);
    await b.subscribe('order.created', { group: 'g', blockMs: 100, minIdleMs: 600, deleteIdleConsumersMs: 1 }, () => undefined);
    const consumers = async () => ((await r.raw.xinfo('CONSUMERS', key, 'g')) as unknown[][]).map((row) => String(row[1]));
    await waitFor(async () => !(await consumers()).includes('gone'), 5000, 'the idle consumer to be deleted');
    expect(logger.messages).toContain('deleted an idle consumer with no pending entries');
    // The one warning that scripts are refused comes from whichever finds it first (here the delete, not a keepalive).
    expect(logger.messages.filter((m) => m.startsWith('Redis refuses scripts'))).toHaveLength(1);
  });
});
