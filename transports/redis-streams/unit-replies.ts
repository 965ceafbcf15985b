/**
 * A Cluster write's replies per unit: a unit learns from its own commands when it is through, while the rest
 * of its write may still wait (an ASK or MOVED sent some of them elsewhere). Used to end a unit's hold on its
 * partition (publisher.ts, holdPartitions).
 */
export class UnitReplies {
  /** Per unit, a promise that settles once every command of the unit has its reply (never rejects). */
  readonly settled: Promise<unknown>[] = [];

  /** Unit `u` was sent as `commands` (their reply promises). */
  sent(u: number, commands: Promise<unknown>[]): void {
    this.settled[u] = Promise.allSettled(commands);
  }
}
