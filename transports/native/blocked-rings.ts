/**
 * Pushes that wait for room in a native ring (backpressure `block`, and history replayed into a new group),
 * and the order they keep. A ring (`lane:partition`) with a push still waiting is blocked: anything pushed
 * to it later, by this write or a later one, is chained behind that push instead of slipping ahead of its
 * remainder. A waiting push retries on the next turns, then every millisecond, until its deadline; it gives
 * up with ClosedError once `close()` is called, and returns when its group has been removed. A push that gives
 * up says so in its result (`PushShortfall`), with how many of the unit's events the ring took first.
 */
import { ClosedError, TimeoutError } from '../../src/errors.js';
import type { PublishUnit } from '../../src/transport.js';
import { PushMode, type PartitionCore } from '../../native/loader.js';
import type { NativeGroup } from './group.js';
import type { History } from './history.js';
import { copyBatch, type EncodedBatch } from './record.js';

/** A waiting push that gave up: why, and how many of the unit's events (its first ones) the ring took. */
export interface PushShortfall {
  readonly err: Error;
  readonly written: number;
}

/** The key of a group's ring of `partition`. */
export function ringKey(group: NativeGroup, partition: number): string {
  return `${group.lane}:${partition}`;
}

export class BlockedRings {
  /** Rings with a blocked push in progress, across writes, and the promise the next push there waits for. */
  private readonly blocked = new Map<string, Promise<void>>();
  /** Wakes every waiting push at once (close, a group removed). */
  private readonly waiting = new Set<() => void>();
  private closed = false;

  constructor(
    private readonly core: PartitionCore,
    private readonly publishTimeoutMs: number,
  ) {}

  /** What a push to `ring` must wait for first, if anything. */
  tail(ring: string): Promise<void> | undefined {
    return this.blocked.get(ring);
  }

  has(ring: string): boolean {
    return this.blocked.has(ring);
  }

  /** Makes `p` what later pushes to `ring` wait for, until it settles. */
  chain(ring: string, p: Promise<unknown>): void {
    const tail = p.then(
      () => undefined,
      () => undefined,
    );
    this.blocked.set(ring, tail);
    void tail.then(() => {
      if (this.blocked.get(ring) === tail) this.blocked.delete(ring);
    });
  }

  /** Wakes every waiting push to look again (a group was removed). */
  wakeAll(): void {
    for (const wake of [...this.waiting]) wake();
  }

  /** Every waiting push gives up (ClosedError) as it wakes, now. */
  close(): void {
    this.closed = true;
    this.wakeAll();
  }

  /**
   * `block`: waits for room without blocking the event loop, until `deadline` (at least one try). `rest` is
   * the unit's last events (of `total`). Resolves with undefined once the ring took them all (or the group was
   * removed), else with the shortfall: the ring took the unit's first `written` events.
   */
  async blockingPush(group: NativeGroup, unit: PublishUnit, rest: EncodedBatch, deadline: number, total: number): Promise<PushShortfall | undefined> {
    let b = rest;
    for (let spins = 0; ; spins++) {
      await new Promise<void>((resolve) => {
        const wake = (): void => {
          this.waiting.delete(wake);
          resolve();
        };
        this.waiting.add(wake);
        if (spins < 8) setImmediate(wake);
        else setTimeout(wake, 1);
      });
      if (this.closed) return { err: new ClosedError('native transport'), written: total - b.n };
      if (group.removed) return undefined; // no such group any more: the unit is written to every group there is
      const done = this.core.push(group.lane, unit.partition, b.bytes, b.lens, b.chars, b.n, PushMode.partial);
      if (done > 0) group.kick();
      if (done === b.n) return undefined;
      if (done > 0) b = copyBatch(b, done);
      if (Date.now() >= deadline) {
        const message = `Partition ${unit.partition} of "${unit.type}" (group "${group.name}") stayed full for ${this.publishTimeoutMs} ms (${b.n} of ${total} events not accepted); raise transport.publishTimeoutMs or capacity.`;
        return { err: new TimeoutError(message), written: total - b.n };
      }
    }
  }

  /**
   * Copies the retained `history` into a new group's rings (what does not fit waits, as under `block`). A
   * remainder waiting for room is chained like a blocked write's, so later chunks and later writes to the
   * ring queue behind it instead of overtaking the history. `incomplete` hears of a replay that gave up.
   */
  replay(history: readonly History[], group: NativeGroup, incomplete: (err: Error) => void): void {
    history.forEach((h, partition) => {
      const ring = ringKey(group, partition);
      const unit: PublishUnit = { type: group.type, partition, events: [], bytes: 0 };
      const deadline = Date.now() + this.publishTimeoutMs;
      for (const chunk of h.chunks()) {
        const before = this.blocked.get(ring);
        if (before) {
          const all = copyBatch(chunk);
          const p = before.then(() => this.blockingPush(group, unit, all, deadline, all.n));
          this.chain(ring, p);
          p.then((short) => short !== undefined && incomplete(short.err), incomplete);
          continue;
        }
        const done = this.core.push(group.lane, partition, chunk.bytes, chunk.lens, chunk.chars, chunk.n, PushMode.partial);
        if (done < chunk.n) {
          const p = this.blockingPush(group, unit, copyBatch(chunk, done), deadline, chunk.n);
          this.chain(ring, p);
          p.then((short) => short !== undefined && incomplete(short.err), incomplete);
        }
      }
    });
  }
}
