/** Native transport edge cases of brokers, groups and history: a shared broker's partition count, dead letters, startFrom 0 replays. */
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { describe, expect, it } from 'vitest';
import { ConfigError, PayloadTooLargeError } from '../../src/index.js';
import { waitFor } from '../helpers/wait.js';
import { nativeBuses, ticks, transportOf } from './harness.js';

/** A full garbage collection (V8's gc(), exposed for this call). */
function collectGarbage(): void {
  setFlagsFromString('--expose-gc');
  (runInNewContext('gc') as () => void)();
}

describe.each(['native', 'js'] as const)('native transport edge cases (%s)', (implementation) => {
  const bus = nativeBuses(implementation, 'native-review');

  it('a bus sharing a named broker needs its partition count: another is a ConfigError naming transport.partitions', async () => {
    const a = await bus({ partitions: 2 });
    const name = transportOf(a).config.name;
    const seen: number[] = [];
    await a.subscribe('tick', { group: 'g' }, (e) => void seen.push(e.data.seq));
    const err = await bus({ partitions: 8, name }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ConfigError);
    expect((err as ConfigError).issues[0]!.path).toEqual(['transport', 'partitions']);
    // The refused bus took no reference: once `a` closes, the name opens a new broker (of any partition count).
    const b = await bus({ partitions: 2, name });
    await b.publishMany('tick', ticks(16), { key: (t) => `k${t.seq}` });
    await waitFor(() => seen.length === 16, 5_000, 'every event of the bus sharing the broker');
    await a.close();
    await b.close();
    const c = await bus({ partitions: 8, name });
    await c.publishMany('tick', ticks(16), { key: (t) => `k${t.seq}` });
  });

  it('an event whose handler outlived the drain on its last allowed delivery is dead-lettered, not run again by the next member', async () => {
    const b = await bus({}, { drainTimeoutMs: 50 });
    const log: string[] = [];
    const first = await b.subscribe('tick', { group: 'g', maxDeliveries: 1 }, (e, ctx) => {
      log.push(`first ${e.data.seq} attempt ${ctx.attempt}`);
      return new Promise(() => {});
    });
    await b.publish('tick', { seq: 7 });
    await waitFor(() => log.length === 1, 5000, 'the first delivery');
    await first.close();
    await b.subscribe('tick', { group: 'g', maxDeliveries: 1 }, (e, ctx) => void log.push(`second ${e.data.seq} attempt ${ctx.attempt}`));
    await b.idle({ timeoutMs: 2000 });
    // The first member's delivery counts: the second member does not run it as attempt 2 of 1.
    expect(log).toEqual(['first 7 attempt 1']);
    const dead = await transportOf(b).deadLetters('tick', 'g');
    expect(dead.map((d) => [d.attempts, (d.event?.data as { seq: number }).seq])).toEqual([[1, 7]]);
    expect(dead[0]!.error).toMatch(/drainTimeoutMs 50/);
  });

  it('a dead letter does not keep the text of the batch its event was popped in alive', async () => {
    const b = await bus({ capacity: 4096, maxEventBytes: 4 << 20, maxLen: 0 }); // a 16 MiB arena; pops of 1,024
    let handled = 0;
    await b.subscribe('tick', { group: 'g', maxDeliveries: 1 }, (e) => {
      handled++;
      if (e.data.seq % 1000 === 0) throw new Error('poison');
    });
    const pad = 'p'.repeat(1000);
    const batches = 20; // one dead letter in each batch of 1,000 events of ~1 KB: ~1 MB of batch text each
    collectGarbage();
    // Heap and external memory: a large batch text may be an external string (the JS core's Buffer#toString).
    const used = () => process.memoryUsage().heapUsed + process.memoryUsage().external;
    const before = used();
    for (let r = 0; r < batches; r++) {
      await b.publishMany(
        'tick',
        ticks(1000, r * 1000).map((t) => ({ ...t, pad })),
      );
      await waitFor(() => handled === (r + 1) * 1000, 5_000, 'the batch handled');
    }
    const dead = await b.deadLetters('tick', { group: 'g' });
    expect(dead.map((d) => (d.event!.data as { seq: number }).seq)).toEqual(Array.from({ length: batches }, (_, r) => r * 1000));
    expect((dead[3]!.event!.data as { pad: string }).pad).toBe(pad);
    collectGarbage();
    // 20 dead letters of ~1 KB each: well under 20 x 1 MB of batch text.
    expect(used() - before).toBeLessThan(5 << 20);
  });

  it('startFrom 0: a retained backlog larger than the ring is delivered before events published during the replay', async () => {
    const b = await bus({ capacity: 8, maxLen: 1000 });
    await b.publishMany('tick', ticks(40));
    const seen: number[] = [];
    let published: Promise<void> | undefined;
    await b.subscribe('tick', { group: 'late', startFrom: '0' }, (e) => {
      seen.push(e.data.seq);
      // While the history is still being replayed (the ring holds 8 of 40); not awaited here: under block it
      // waits for room this consumer makes.
      published ??= b.publish('tick', { seq: 1000 });
    });
    await waitFor(() => seen.length === 41, 10_000, '41 events');
    await published;
    expect(seen).toEqual([...ticks(40).map((t) => t.seq), 1000]);
  });

  it('an event too large for any ring is rejected even with no group yet, and does not break a later startFrom 0', async () => {
    const b = await bus({ capacity: 16, maxEventBytes: 16_384 });
    await b.publish('tick', { seq: 1 });
    await expect(b.publish('tick', { seq: 2 }, { headers: { big: 'x'.repeat(40_000) } })).rejects.toBeInstanceOf(PayloadTooLargeError);
    await b.publish('tick', { seq: 3 });
    const seen: number[] = [];
    await b.subscribe('tick', { group: 'late', startFrom: '0' }, (e) => void seen.push(e.data.seq));
    await waitFor(() => seen.length === 2, 5_000, '2 events');
    expect(seen).toEqual([1, 3]);
  });
});
