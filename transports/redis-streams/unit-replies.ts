/**
 * A Cluster write's replies per unit: a unit learns from its own commands when it is through, while the rest
 * of its write may still wait (an ASK or MOVED sent some of them elsewhere). It tells when a unit's hold on
 * its partition ends (partition-turns.ts, PartitionTurns.hold) and when a write queued behind earlier turns
 * was sent.
 */
export class UnitReplies {
  /** Per unit, a promise that settles once every command of the unit has its reply (never rejects). */
  readonly settled: Promise<unknown>[] = [];
  /** When the write was sent (its first unit), once it is. */
  sentAt: number | undefined;
  /** Resolves when the write is sent; pending for good when it never is. */
  readonly whenSent: Promise<void>;
  private markSent!: () => void;

  constructor() {
    this.whenSent = new Promise<void>((resolve) => (this.markSent = resolve));
  }

  /** Unit `u` was sent as `commands` (their reply promises). */
  sent(u: number, commands: Promise<unknown>[]): void {
    this.settled[u] = Promise.allSettled(commands);
    this.sentAt ??= Date.now();
    this.markSent();
  }
}
