import { emptyObjectArray } from './arrays.js';

/** A FIFO queue over an array with a moving head; amortised O(1) push/shift without per-item nodes. */
export class Deque<T> {
  // Objects from the start (see emptyObjectArray): a new bus's queues keep the shape the first one's had.
  private items: (T | undefined)[] = emptyObjectArray();
  private head = 0;

  get length(): number {
    return this.items.length - this.head;
  }

  push(item: T): void {
    this.items.push(item);
  }

  pushAll(items: readonly T[]): void {
    for (let i = 0; i < items.length; i++) this.items.push(items[i]);
  }

  /** Put an item back at the front. */
  unshift(item: T): void {
    if (this.head > 0) this.items[--this.head] = item;
    else this.items.unshift(item);
  }

  peek(): T | undefined {
    return this.head < this.items.length ? this.items[this.head] : undefined;
  }

  shift(): T | undefined {
    if (this.head >= this.items.length) return undefined;
    const item = this.items[this.head];
    this.items[this.head++] = undefined;
    if (this.head >= 1024 && this.head * 2 >= this.items.length) {
      this.items = this.items.slice(this.head);
      this.head = 0;
    }
    return item;
  }

  /** Drop items from the front until at most `max` remain. */
  trimTo(max: number): void {
    while (this.length > max) this.shift();
  }

  toArray(): T[] {
    return this.items.slice(this.head) as T[];
  }

  clear(): void {
    this.items = emptyObjectArray();
    this.head = 0;
  }
}
