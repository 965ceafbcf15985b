import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { createEventBus, defineEvents } from '../../src/index.js';
import { describeConformance } from './suite.js';
import { uniqueName, waitFor } from '../helpers/wait.js';

describeConformance({ name: 'memory', transport: () => ({ type: 'memory', partitions: 4, name: uniqueName('mem') }) });

describe('memory transport: group members', () => {
  const events = defineEvents({ tick: z.object({ seq: z.number().int() }) });

  it('members that subscribe together share retained events (startFrom 0) by partition, none inside subscribe()', async () => {
    const bus = await createEventBus({ service: 'mem-test', events, transport: { type: 'memory', partitions: 4, maxLen: 10_000, name: uniqueName('mem') } });
    try {
      await bus.publishMany('tick', Array.from({ length: 8000 }, (_, seq) => ({ seq })));
      const per = [0, 0, 0, 0];
      const seen = new Set<number>();
      await Promise.all(
        per.map((_, k) =>
          bus.subscribe('tick', { group: 'late', consumer: `m${k}`, startFrom: '0' }, (e) => {
            per[k]!++;
            seen.add(e.data.seq);
          }),
        ),
      );
      expect(per).toEqual([0, 0, 0, 0]);
      await waitFor(() => seen.size === 8000, 10_000, 'every retained event');
      expect(per).toEqual([2000, 2000, 2000, 2000]);
    } finally {
      await bus.close();
    }
  });
});
