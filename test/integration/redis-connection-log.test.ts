/**
 * The Redis transport says when a connection is lost and when it is back, once per loss, against a real
 * redis-server whose clients are killed; closing the bus is not a loss.
 */
import { describe, expect, it } from 'vitest';
import { createEventBus } from '../../src/index.js';
import { uniquePrefix } from '../helpers/redis-server.js';
import { waitFor } from '../helpers/wait.js';
import { events, fastRead, recordingLogger, redisForFile } from './redis-common.js';

const r = redisForFile();

describe('redis-streams: connection state in the log', () => {
  it('a killed connection is logged lost (warn) and restored (info), and close() logs no loss', async () => {
    const logger = recordingLogger();
    const b = await createEventBus({ service: 'conn', events, logger, transport: { type: 'redis-streams', url: r.server.url, prefix: uniquePrefix('connlog'), partitions: 1 } });
    await b.subscribe('order.created', { group: 'g', ...fastRead }, () => {});
    await b.publish('order.created', { orderId: 'o-1', amount: 1, seq: 1 });
    await r.raw.call('CLIENT', 'KILL', 'TYPE', 'normal', 'SKIPME', 'yes');
    await waitFor(() => logger.messages.includes('connection to Redis restored'), 10_000, 'the connections to come back');
    const lost = logger.lines.filter((l) => l.msg === 'connection to Redis lost; reconnecting');
    expect(lost.length).toBeGreaterThan(0);
    expect(lost.every((l) => l.level === 'warn' && typeof l.obj['role'] === 'string' && String(l.obj['address']).startsWith('redis://'))).toBe(true);
    const restored = logger.lines.filter((l) => l.msg === 'connection to Redis restored');
    expect(restored[0]!.level).toBe('info');
    expect(restored[0]!.obj['downMs']).toBeTypeOf('number');
    await b.publish('order.created', { orderId: 'o-2', amount: 1, seq: 2 });
    await b.idle({ timeoutMs: 10_000 });
    const before = lost.length;
    await b.close();
    expect(logger.lines.filter((l) => l.msg === 'connection to Redis lost; reconnecting')).toHaveLength(before);
  });
});
