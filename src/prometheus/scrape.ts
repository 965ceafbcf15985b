/**
 * What the collector reads of its buses at scrape time. The group gauges (and the reclaim counter, whose
 * series it creates at 0 for every group) collect together within one scrape: they share one read of every
 * bus's `groupCounts()` while it is in flight. A bus whose read fails is left out of that scrape's group
 * series; a (type, group) two buses report is taken from the first.
 */
import type { GroupCounts } from '../group-counts.js';
import type { MeteredBus } from './options.js';

export class BusReader {
  readonly buses = new Set<MeteredBus>();
  private reading: Promise<GroupCounts[]> | undefined;

  /** Events buffered in the buses' publishers (`stats().pendingEvents`). */
  buffered(): number {
    let n = 0;
    for (const bus of this.buses) n += bus.stats().pendingEvents;
    return n;
  }

  /** Every bus's group counts, one read shared by the collects of one scrape. */
  groups(): Promise<GroupCounts[]> {
    this.reading ??= this.readGroups().finally(() => {
      this.reading = undefined;
    });
    return this.reading;
  }

  private async readGroups(): Promise<GroupCounts[]> {
    const all = await Promise.all(
      [...this.buses].map((bus) =>
        bus.groupCounts().then(
          (c) => c,
          () => [] as readonly GroupCounts[],
        ),
      ),
    );
    const seen = new Map<string, GroupCounts>();
    for (const counts of all) {
      for (const c of counts) {
        const key = JSON.stringify([c.type, c.group]);
        if (!seen.has(key)) seen.set(key, c);
      }
    }
    return [...seen.values()];
  }
}
