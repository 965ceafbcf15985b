/** Native transport worker consumers pinned to CPUs (`cpus`): placement, replacement threads, refused CPUs, no addon. */
import { describe, expect, it } from 'vitest';
import { ConfigError } from '../../src/index.js';
import { currentThreadCpus } from '../../transports/native/index.js';
import { waitFor } from '../helpers/wait.js';
import { errorLog, fixture, nativeBuses, ticks } from './harness.js';

/** The CPUs this thread may run on that fit a 31-bit mask (the affinity fixture's). */
const maskableCpus = () => currentThreadCpus()!.filter((c) => c < 31);

describe.each(['native', 'js'] as const)('native transport (%s)', (implementation) => {
  const bus = nativeBuses(implementation, 'native-test');

  it('worker consumers: cpus pins thread k to cpus[k % cpus.length]', async () => {
    const allowed = maskableCpus();
    const cpus = [allowed[allowed.length - 1]!, allowed[0]!];
    const b = await bus({ partitions: 3 });
    const counters = new Int32Array(new SharedArrayBuffer(4 * 5));
    await b.subscribe('tick', { group: 'pinned', workers: 3, cpus, handler: fixture('affinity-handler.mjs'), workerData: { counters: counters.buffer } });
    await b.publishMany('tick', ticks(300));
    await waitFor(() => Atomics.load(counters, 1) === 300, 5000, 'all 300 events in the pinned workers');
    // Slots are taken in start order, not thread order: compare as multisets.
    const masks = [2, 3, 4].map((i) => counters[i]!).sort();
    expect(masks).toEqual([cpus[0]!, cpus[1]!, cpus[0]!].map((c) => 1 << c).sort());
  });

  it('worker consumers: a replacement thread runs on the CPU of the thread it replaces', async () => {
    const allowed = maskableCpus();
    const cpu = allowed[allowed.length - 1]!;
    const b = await bus({ partitions: 1 }, { logger: errorLog().logger });
    const counters = new Int32Array(new SharedArrayBuffer(4 * 4));
    const flags = new Int32Array(new SharedArrayBuffer(4));
    await b.subscribe('tick', {
      group: 'pinned-crash',
      workers: 1,
      cpus: [cpu],
      handler: fixture('affinity-handler.mjs'),
      workerData: { counters: counters.buffer, flags: flags.buffer, crashAt: 10 },
    });
    await b.publishMany('tick', ticks(50));
    await waitFor(() => Atomics.load(counters, 0) === 2 && Atomics.load(counters, 1) >= 50, 10_000, 'a replacement thread delivering the rest');
    expect(Atomics.load(flags, 0)).toBeGreaterThanOrEqual(1);
    expect([counters[2], counters[3]]).toEqual([1 << cpu, 1 << cpu]);
  });

  it('cpus: only with workers, and a CPU the OS refuses rejects subscribe with ConfigError, losing nothing', async () => {
    const b = await bus({ partitions: 2 });
    await expect(b.subscribe('tick', { group: 'x', cpus: [0] }, () => {})).rejects.toThrow(/cpus.*workers/);
    await expect(b.subscribe('tick', { group: 'x', workers: 1, cpus: [-1], handler: fixture('count-handler.mjs') })).rejects.toBeInstanceOf(ConfigError);
    await b.publishMany('tick', ticks(50));
    const err = await b
      .subscribe('tick', { group: 'x', startFrom: '0', workers: 2, cpus: [1023], handler: fixture('count-handler.mjs'), workerData: { counters: new SharedArrayBuffer(12) } })
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ConfigError);
    expect((err as ConfigError).issues[0]!.path).toEqual(['cpus']);
    expect((err as Error).message).toMatch(/cpus: Cannot pin this thread to CPUs 1023: pthread_setaffinity_np: Invalid argument/);
    const seen = new Set<number>();
    await b.subscribe('tick', { group: 'x', startFrom: '0' }, (e) => void seen.add(e.data.seq));
    await waitFor(() => seen.size === 50, 5000, 'all 50 events in the group');
  });

  // (A native core needs the addon in every thread: only a JS core runs where it does not load.)
  if (implementation === 'js')
    it('cpus without the addon: the workers run unpinned, with one warning per group', async () => {
      const warnings: string[] = [];
      const base = errorLog().logger;
      const logger: typeof base = { ...base, warn: ((_: unknown, msg: string) => void warnings.push(msg)) as () => void, child: () => logger };
      const b = await bus({ partitions: 2 }, { logger });
      const counters = new Int32Array(new SharedArrayBuffer(4 * 4));
      // A worker thread takes its environment from process.env when it starts.
      process.env['EVENTLANE_NATIVE'] = '0';
      try {
        await b.subscribe('tick', { group: 'unpinned', workers: 2, cpus: [0], handler: fixture('affinity-handler.mjs'), workerData: { counters: counters.buffer } });
      } finally {
        delete process.env['EVENTLANE_NATIVE'];
      }
      await b.publishMany('tick', ticks(100));
      await waitFor(() => Atomics.load(counters, 1) === 100, 5000, 'all 100 events in the unpinned workers');
      expect(warnings.filter((w) => w.includes('cpus ignored'))).toHaveLength(1);
      // Both run where this thread may run (the process's CPUs), not on CPU 0 alone.
      const mask = maskableCpus().reduce((m, c) => m | (1 << c), 0);
      expect([counters[2], counters[3]]).toEqual([mask, mask]);
    });
});
