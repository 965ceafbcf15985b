/**
 * In-process brokers shared by name: transports opened with the same `name` in one process use the same
 * state (topics, groups, rings), as buses would share a real broker. Unnamed state is private to its
 * transport. Reference-counted: the last `release` tells the caller to tear the state down.
 */
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
