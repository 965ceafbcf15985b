/**
 * In-process brokers shared by name: transports opened with the same `name` in one process use the same
 * state (topics, groups, rings), as buses would share a real broker. Unnamed state is private to its
 * transport. Reference-counted: the last `release` tells the caller to tear the state down.
 */
import { ConfigError } from './errors.js';
import type { DeadLetter } from './transport.js';

export class SharedBrokers<T> {
  private readonly byName = new Map<string, { state: T; refs: number }>();

  /** The state registered under `name` (created with `create` on first use), or a private one. */
  acquire(name: string | undefined, create: () => T): T {
    if (name === undefined) return create();
    let entry = this.byName.get(name);
    if (!entry) {
      entry = { state: create(), refs: 0 };
      this.byName.set(name, entry);
    }
    entry.refs++;
    return entry.state;
  }

  /** Drops one reference; true when the caller held the last one (or the state was private). */
  release(name: string | undefined): boolean {
    if (name === undefined) return true;
    const entry = this.byName.get(name);
    if (!entry || --entry.refs > 0) return false;
    this.byName.delete(name);
    return true;
  }
}

/**
 * `Transport.deadLetters` of an in-process broker: the dead letters its groups of a type keep (all groups,
 * or the one named), oldest first, at most `limit`.
 */
export function deadLettersOf(groups: Iterable<{ readonly name: string; readonly deadLetters: readonly DeadLetter[] }>, group: string | undefined, limit: number): DeadLetter[] {
  const all: DeadLetter[] = [];
  for (const g of groups) if (group === undefined || g.name === group) all.push(...g.deadLetters);
  return all.sort((a, b) => a.deadAt - b.deadAt).slice(0, limit);
}

/**
 * A bus configured with `configured` partitions for `type` on an in-process broker (`what`, e.g. `memory broker
 * "orders"`) that has `recorded` for it, as a ConfigError naming both counts and what to do.
 */
export function partitionsMismatch(what: string, type: string, configured: number, recorded: number): ConfigError {
  const message =
    `transport.partitions is ${configured} for "${type}", but ${what} has ${recorded} partitions recorded for it (set by the first bus that used the type): ` +
    `leave partitions unset to use the recorded count, or set ${recorded}`;
  return new ConfigError(`Invalid transport: ${message}.`, [{ path: ['transport', 'partitions'], message, code: 'custom' }]);
}
