/**
 * A Cluster write's replies per unit: a write spread over masters learns from each unit's own commands when
 * that unit is through, while the rest of the write may still wait on a master in failover. Used to end a
 * unit's hold on its partition (publisher.ts, holdPartitions) and to settle its publishes early
 * (Transport.write's `unitWritten`).
 */
export class UnitReplies {
  /** Per unit, a promise that settles once every command of the unit has its reply (never rejects). */
  readonly settled: Promise<unknown>[] = [];

  /** `written(u)`: unit u's commands all succeeded (not given with waitForReplicas: a unit is written after its WAIT). */
  constructor(private readonly written?: (unit: number) => void) {}

  /** Unit `u` was sent as `commands` (their reply promises). */
  sent(u: number, commands: Promise<unknown>[]): void {
    const all = Promise.allSettled(commands);
    this.settled[u] = all;
    const written = this.written;
    if (written !== undefined) void all.then((rs) => rs.every((r) => r.status === 'fulfilled') && written(u));
  }
}
