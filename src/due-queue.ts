/**
 * The bus's in-process schedule, for a transport without `TransportScheduling`: delayed events wait in a
 * `DueHeap` behind one timer set for the earliest; when due, `release` publishes each as any event. Not
 * durable: what is not due when the queue closes (the bus closes) is dropped. Lifecycle: `open` (timer set
 * while anything waits) -> `closed` (timer cleared, heap emptied, `add` refused).
 */
import { DueHeap } from './due-heap.js';
import { ClosedError } from './errors.js';

/** setTimeout's longest delay; a later due time is waited for in steps. */
const MAX_TIMER_MS = 2 ** 31 - 1;

export interface DueEntry<E> {
  readonly dueAt: number;
  readonly id: string;
  readonly type: string;
  readonly item: E;
  cancelled: boolean;
}

export class DueQueue<E> {
  private readonly heap = new DueHeap<DueEntry<E>>();
  /** Entries not yet released nor cancelled, by type and id. */
  private readonly byId = new Map<string, DueEntry<E>>();
  private timer: NodeJS.Timeout | undefined;
  private timerAt = Infinity;
  private state: 'open' | 'closed' = 'open';

  constructor(private readonly release: (entry: DueEntry<E>) => void) {}

  add(type: string, id: string, item: E, dueAt: number): void {
    if (this.state === 'closed') throw new ClosedError();
    const entry: DueEntry<E> = { dueAt, id, type, item, cancelled: false };
    this.heap.push(entry);
    this.byId.set(keyOf(type, id), entry);
    this.arm();
  }

  /** Removes the entry of `type` and `id` not yet released: true when it did. */
  cancel(type: string, id: string): boolean {
    const key = keyOf(type, id);
    const entry = this.byId.get(key);
    if (entry === undefined) return false;
    entry.cancelled = true;
    this.byId.delete(key);
    return true;
  }

  close(): void {
    this.state = 'closed';
    clearTimeout(this.timer);
    this.timer = undefined;
    this.heap.clear();
    this.byId.clear();
  }

  /** Sets the timer for the earliest entry, unless one is set for it already. */
  private arm(): void {
    const next = this.heap.peek();
    if (next === undefined || next.dueAt >= this.timerAt) return;
    clearTimeout(this.timer);
    this.timerAt = next.dueAt;
    this.timer = setTimeout(() => this.fire(), Math.min(Math.max(0, next.dueAt - Date.now()), MAX_TIMER_MS));
  }

  private fire(): void {
    this.timer = undefined;
    this.timerAt = Infinity;
    const now = Date.now();
    for (let e = this.heap.peek(); e !== undefined && e.dueAt <= now; e = this.heap.peek()) {
      this.heap.pop();
      if (e.cancelled) continue;
      this.byId.delete(keyOf(e.type, e.id));
      this.release(e);
    }
    if (this.state === 'open') this.arm();
  }
}

function keyOf(type: string, id: string): string {
  return `${type}\n${id}`;
}
