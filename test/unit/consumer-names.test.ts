/** Default consumer names are unique per type and group in one process; a name given twice is warned about. */
import { hostname } from 'node:os';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { createEventBus, defineEvents, type Logger } from '../../src/index.js';

const events = defineEvents({ 'a.b': z.object({ n: z.number() }), 'c.d': z.object({ n: z.number() }) });

function warnings(): Logger & { msgs: string[] } {
  const msgs: string[] = [];
  const drop = (): void => undefined;
  return { msgs, debug: drop, info: drop, error: drop, warn: (_o: object, m?: string) => void msgs.push(m ?? '') };
}

describe('consumer names', () => {
  it('a second subscription of one type and group gets #2, a third #3; other groups and types keep the plain name; a closed one frees its name', async () => {
    const logger = warnings();
    const bus = await createEventBus({ service: 'svc', events, logger, transport: { type: 'memory' } });
    const base = `svc@${hostname()}:${process.pid}`;
    const noop = (): void => undefined;
    const s1 = await bus.subscribe('a.b', { group: 'g' }, noop);
    const s2 = await bus.subscribe('a.b', { group: 'g' }, noop);
    const s3 = await bus.subscribe('a.b', { group: 'g' }, noop);
    const other = await bus.subscribe('a.b', { group: 'h' }, noop);
    const otherType = await bus.subscribe('c.d', { group: 'g' }, noop);
    expect([s1.consumer, s2.consumer, s3.consumer, other.consumer, otherType.consumer]).toEqual([base, `${base}#2`, `${base}#3`, base, base]);
    // Another bus in this process counts too: same pid, same group.
    const bus2 = await createEventBus({ service: 'svc', events, transport: { type: 'memory' } });
    expect((await bus2.subscribe('a.b', { group: 'g' }, noop)).consumer).toBe(`${base}#4`);
    await s2.close();
    expect((await bus.subscribe('a.b', { group: 'g' }, noop)).consumer).toBe(`${base}#2`);
    expect(logger.msgs).toEqual([]);
    await bus.subscribe('a.b', { group: 'g', consumer: 'mine' }, noop);
    await bus.subscribe('a.b', { group: 'g', consumer: 'mine' }, noop);
    expect(logger.msgs).toHaveLength(1);
    expect(logger.msgs[0]).toMatch(/share a consumer name/);
    await bus2.close();
    await bus.close();
    // All released: the plain name again.
    const bus3 = await createEventBus({ service: 'svc', events, transport: { type: 'memory' } });
    expect((await bus3.subscribe('a.b', { group: 'g' }, noop)).consumer).toBe(base);
    await bus3.close();
  });

  it('a subscribe that fails gives its name back', async () => {
    const bus = await createEventBus({ service: 'svc2', events, transport: { type: 'memory' } });
    const base = `svc2@${hostname()}:${process.pid}`;
    // Refused by the transport (its own options), after the name was taken.
    await expect(bus.subscribe('a.b', { group: 'g', workers: 2 } as never, () => undefined)).rejects.toThrow(/workers/);
    expect((await bus.subscribe('a.b', { group: 'g' }, () => undefined)).consumer).toBe(base);
    await bus.close();
  });
});
