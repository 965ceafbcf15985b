import { emptyObjectArray } from './arrays.js';

/** Slots a ring keeps when it empties; a larger one is let go, so a backlog's memory is not held after it drained. */
const KEEP_SLOTS = 1024;

/**
 * A FIFO queue in a ring: amortised O(1) push, shift and unshift without per-item nodes. The ring's array is
 * replaced only when it is full (its size doubles), so a queue that stays short allocates nothing as items pass
 * through it, however many do.
 */
export class Deque<T> {
  // Objects from the start (see emptyObjectArray): a new bus's queues keep the shape the first one's had.
  // Its length is the capacity, 0 or a power of two; slots not in the queue hold undefined.
  private items: (T | undefined)[] = emptyObjectArray();
  private head = 0;
  private count = 0;

  get length(): number {
    return this.count;
  }

  push(item: T): void {
    if (this.count === this.items.length) this.grow();
    this.items[(this.head + this.count) & (this.items.length - 1)] = item;
    this.count++;
  }

  pushAll(items: readonly T[]): void {
    for (let i = 0; i < items.length; i++) this.push(items[i]!);
  }

  /** Put an item back at the front. */
  unshift(item: T): void {
    if (this.count === this.items.length) this.grow();
    this.head = (this.head - 1) & (this.items.length - 1);
    this.items[this.head] = item;
    this.count++;
  }

  peek(): T | undefined {
    return this.count > 0 ? this.items[this.head] : undefined;
  }

  shift(): T | undefined {
    if (this.count === 0) return undefined;
    const item = this.items[this.head];
    this.items[this.head] = undefined;
    this.head = (this.head + 1) & (this.items.length - 1);
    if (--this.count === 0 && this.items.length > KEEP_SLOTS) this.clear();
    return item;
  }

  /** Drop items from the front until at most `max` remain. */
  trimTo(max: number): void {
    while (this.count > max) this.shift();
  }

  toArray(): T[] {
    const out = emptyObjectArray<T>();
    const mask = this.items.length - 1;
    for (let i = 0; i < this.count; i++) out.push(this.items[(this.head + i) & mask]!);
    return out;
  }

  clear(): void {
    this.items = emptyObjectArray();
    this.head = 0;
    this.count = 0;
  }

  /** A ring twice as large (at least 16 slots), with the items in order from its start. */
  private grow(): void {
    const next = this.toArray() as (T | undefined)[];
    const size = Math.max(16, this.items.length * 2);
    while (next.length < size) next.push(undefined);
    this.items = next;
    this.head = 0;
  }
}
