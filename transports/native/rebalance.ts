/**
 * How a native group shares its partitions, and the events handed back to it, among its members. The
 * partitions are dealt round-robin over the live members (a main-thread member, or a worker member with a
 * thread alive), and a worker member's share round-robin over its live threads. `Backlog` holds the events
 * members that left (or threads that died) handed back, by partition, until the partition's next owner is
 * given them by `rebalance`.
 */
import type { Pending } from './consumer.js';
import type { Member } from './members.js';

/** Events handed back to the group, by partition, until an owner takes them. */
export class Backlog {
  private readonly byPartition = new Map<number, Pending[]>();

  add(items: Pending[]): void {
    for (const it of items) {
      let list = this.byPartition.get(it.partition);
      if (!list) this.byPartition.set(it.partition, (list = []));
      list.push(it);
    }
  }

  /** Takes out every event of `parts`. */
  take(parts: number[]): Pending[] {
    const out: Pending[] = [];
    for (const p of parts) {
      const list = this.byPartition.get(p);
      if (list) {
        out.push(...list);
        this.byPartition.delete(p);
      }
    }
    return out;
  }

  /** Events held, over all partitions. */
  get size(): number {
    let n = 0;
    for (const list of this.byPartition.values()) n += list.length;
    return n;
  }
}

/**
 * Deals the `partitions` out among `members` and gives each new owner the backlog of its partitions. A
 * worker member whose threads all died and were not replaced (crash loop, a replacement that failed to load)
 * owns no partitions: they go to the group's other members. The caller wakes the lane's threads after.
 */
export function rebalance(members: readonly Member[], partitions: number, backlog: Backlog): void {
  const live = members.filter((m) => m.kind === 'main' || m.threads.some((t) => t.alive));
  for (const m of live) m.parts = [];
  if (live.length > 0) for (let p = 0; p < partitions; p++) live[p % live.length]!.parts.push(p);
  for (const m of live) {
    if (m.kind === 'main') {
      m.consumer.setPartitions(m.parts);
      const give = backlog.take(m.parts);
      if (give.length) m.consumer.give(give);
      m.consumer.resumeLater(); // after the turn: members joining together all get their share first
    } else {
      const threads = m.threads.filter((t) => t.alive);
      threads.forEach((t, i) => {
        t.parts = m.parts.filter((_, k) => k % threads.length === i);
        for (const p of t.parts) t.owned.add(p);
        t.worker.postMessage({ t: 'assign', parts: t.parts });
        const give = backlog.take(t.parts);
        if (give.length) {
          for (const it of give) t.parked.set(it.env.id, it); // not in the ring: kept here until finished
          t.worker.postMessage({ t: 'give', items: give });
        }
      });
    }
  }
}
