/**
 * A binary min-heap of items by due time (epoch ms); items due at the same time leave in the order they were
 * pushed. Used by the bus's in-process schedule (src/due-queue.ts).
 */
export interface DueItem {
  readonly dueAt: number;
}

export class DueHeap<T extends DueItem> {
  private readonly items: { item: T; seq: number }[] = [];
  private seq = 0;

  get size(): number {
    return this.items.length;
  }

  /** The earliest due item, or undefined when empty. */
  peek(): T | undefined {
    return this.items[0]?.item;
  }

  push(item: T): void {
    const a = this.items;
    a.push({ item, seq: this.seq++ });
    let i = a.length - 1;
    while (i > 0) {
      const parent = (i - 1) >> 1;
      if (!this.before(i, parent)) break;
      this.swap(i, parent);
      i = parent;
    }
  }

  /** Removes and returns the earliest due item, or undefined when empty. */
  pop(): T | undefined {
    const a = this.items;
    const top = a[0];
    const last = a.pop();
    if (top === undefined || last === undefined || a.length === 0) return top?.item;
    a[0] = last;
    let i = 0;
    for (;;) {
      const l = 2 * i + 1;
      const r = l + 1;
      let m = i;
      if (l < a.length && this.before(l, m)) m = l;
      if (r < a.length && this.before(r, m)) m = r;
      if (m === i) break;
      this.swap(i, m);
      i = m;
    }
    return top.item;
  }

  clear(): void {
    this.items.length = 0;
  }

  private before(i: number, j: number): boolean {
    const a = this.items[i]!;
    const b = this.items[j]!;
    return a.item.dueAt < b.item.dueAt || (a.item.dueAt === b.item.dueAt && a.seq < b.seq);
  }

  private swap(i: number, j: number): void {
    const a = this.items;
    const t = a[i]!;
    a[i] = a[j]!;
    a[j] = t;
  }
}
