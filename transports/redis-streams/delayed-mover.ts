/**
 * Moves due delayed events of the types this process schedules on or subscribes to into their partition
 * streams (`moveDue`, delayed-scripts.ts). Lifecycle: `idle` (no type yet) -> `waiting` (a timer set) <->
 * `moving` (a pass in flight) -> `closed`.
 *
 * A pass runs at least every `POLL_MS`, and sooner when an event it knows of comes due. A type's scripts (one
 * per partition) run when something may be due there:
 * - the earliest due time its last scripts reported, or a `wake` here gave, has come;
 * - `FULL_PASS_MS` went by without scripts: events whose writer stopped between storing them and raising the
 *   counter (a crash) are moved within that;
 * - otherwise, only if its schedule counter (`delayedSeqKey`, one GET), which every scheduling write raises after
 *   storing its events, changed since the counter read before its last scripts (another process scheduled).
 * Invariant: `seq` was read before scripts that ran since. An event stored after those scripts read their
 * partition raises the counter after that read, so a pass that finds the counter unchanged has nothing new to
 * move; one that finds it changed runs the scripts. Scripts run for a known due time leave `seq` as it was:
 * the counter may then look changed once more, which costs one script run, never a missed event.
 * A pass that moved a full `LIMIT` from a partition runs again at once.
 */
import { describeError } from '../../src/errors.js';
import type { Logger } from '../../src/logger.js';
import type { ResolvedConfig } from './config.js';
import type { Client } from './connection.js';
import { moveDue } from './delayed-scripts.js';
import { delayedDataKey, delayedKey, delayedSeqKey, streamKey } from './keys.js';
import type { ServerClock } from './server-clock.js';

/** Longest sleep between passes: the bound on how late another process's event is seen. */
export const POLL_MS = 50;
/** Longest time a type's scripts are skipped: the bound for events stored without raising the counter. */
export const FULL_PASS_MS = 1000;
/** Most events one script moves from one partition. */
const LIMIT = 500;

type State = 'idle' | 'waiting' | 'moving' | 'closed';

/** What a type's last scripts saw. */
interface TypeWatch {
  /** The schedule counter read before scripts that ran since (undefined: none read; null: no counter yet). */
  seq: string | null | undefined;
  /** Earliest due time (Redis ms) of an event left scheduled that the last scripts or a `wake` saw, or Infinity. */
  nextDue: number;
  /** Local time by which the scripts run again whatever the counter says. */
  fullAt: number;
}

export class DelayedMover {
  private readonly types = new Map<string, TypeWatch>();
  private state: State = 'idle';
  private timer: NodeJS.Timeout | undefined;
  /** Local time the timer fires at (while `waiting`). */
  private wakeAt = Infinity;
  /** Earliest local due time `wake` gave while `moving`: the pass's timer fires by then. */
  private wokeFor = Infinity;
  private failing = false;
  /** Events this mover moved (tests, diagnostics). */
  moved = 0;

  constructor(
    private readonly config: ResolvedConfig,
    private readonly client: Client,
    private readonly clock: ServerClock,
    private readonly partitionsFor: (type: string) => number,
    private readonly logger: Logger,
  ) {}

  /** Moves `type`'s due events from now on (starting the mover on its first type). */
  track(type: string): void {
    if (this.state === 'closed' || this.types.has(type)) return;
    this.types.set(type, { seq: undefined, nextDue: Infinity, fullAt: 0 });
    if (this.state === 'idle') this.sleep(0);
  }

  /** An event of `type` due at `dueAt` (local ms; its score is `clock.latest(dueAt)`) was stored: a pass runs its scripts by then. */
  wake(type: string, dueAt: number): void {
    const w = this.types.get(type);
    if (w !== undefined) w.nextDue = Math.min(w.nextDue, this.clock.latest(dueAt));
    if (this.state === 'moving') this.wokeFor = Math.min(this.wokeFor, dueAt);
    else if (this.state === 'waiting' && dueAt < this.wakeAt) this.sleep(Math.max(0, dueAt - Date.now()));
  }

  close(): void {
    this.state = 'closed';
    clearTimeout(this.timer);
    this.timer = undefined;
  }

  private sleep(ms: number): void {
    clearTimeout(this.timer);
    this.state = 'waiting';
    this.wakeAt = Date.now() + ms;
    this.timer = setTimeout(() => void this.pass(), ms);
  }

  private async pass(): Promise<void> {
    if (this.state !== 'waiting') return;
    this.state = 'moving';
    this.wokeFor = Infinity;
    let next = POLL_MS;
    try {
      next = await this.moveAll();
      this.failing = false;
    } catch (err) {
      if (!this.failing) this.logger.warn({ err: describeError(err) }, 'could not move due delayed events; retrying');
      this.failing = true;
    }
    if ((this.state as State) === 'closed') return;
    this.sleep(Math.min(next, Math.max(0, this.wokeFor - Date.now())));
  }

  /** Runs the scripts of the types that need them (reading counters only where a due time does not decide); resolves with how long to sleep. */
  private async moveAll(): Promise<number> {
    const now = this.clock.now(Date.now());
    // Due by the highest server time the pass's time can be (`latest`: the score of an event scheduled here for
    // it). The pass's time is the one its timer was set for, which a timer on the loop's ms clock may fire before.
    const dueBy = this.clock.latest(Math.max(Date.now(), this.wakeAt));
    const due: [string, TypeWatch][] = [];
    const undecided: [string, TypeWatch][] = [];
    let sleep = POLL_MS;
    for (const tw of this.types) {
      const w = tw[1];
      if (w.nextDue <= dueBy || Date.now() >= w.fullAt) due.push(tw);
      else {
        undecided.push(tw);
        sleep = Math.min(sleep, Math.max(1, w.nextDue - now));
      }
    }
    const sleeps = await Promise.all([...due.map(([type, w]) => this.moveType(type, w, w.seq)), this.moveChanged(undecided)]);
    return Math.min(sleep, ...sleeps);
  }

  /** Reads the counters of `types` and runs the scripts of those whose counter changed; resolves with how long to sleep. */
  private async moveChanged(types: [string, TypeWatch][]): Promise<number> {
    if (types.length === 0) return POLL_MS;
    const seqs = await Promise.all(types.map(([type]) => this.client.get(delayedSeqKey(this.config.prefix, type))));
    const runs = types.flatMap(([type, w], i) => (seqs[i] === w.seq ? [] : [this.moveType(type, w, seqs[i] ?? null)]));
    return Math.min(POLL_MS, ...(await Promise.all(runs)));
  }

  /**
   * One script per partition of `type`; once they all succeeded, records `seq` (read before them) and the
   * earliest due time left (theirs, or a `wake`'s during them), and resolves with how long to sleep. After a
   * failure the next pass runs them again.
   */
  private async moveType(type: string, w: TypeWatch, seq: string | null | undefined): Promise<number> {
    const prefix = this.config.prefix;
    const trim = this.trimArgs(type);
    const runs: Promise<unknown>[] = [];
    for (let p = 0; p < this.partitionsFor(type); p++) {
      runs.push(moveDue.runKeys(this.client, [delayedKey(prefix, type, p), delayedDataKey(prefix, type, p), streamKey(prefix, type, p)], [LIMIT, ...trim]));
    }
    const fullAt = Date.now() + FULL_PASS_MS;
    w.nextDue = Infinity;
    const replies = await Promise.all(runs).catch((err: unknown) => {
      w.nextDue = -Infinity;
      throw err;
    });
    let full = false;
    let nextDue = Infinity;
    let serverNow = 0;
    let malformed = 0;
    for (const reply of replies as [number, number, number, number][]) {
      const [moved, due, now, bad] = reply.map(Number) as [number, number, number, number];
      this.moved += moved;
      malformed += bad;
      if (moved >= LIMIT) full = true;
      if (due >= 0) nextDue = Math.min(nextDue, due);
      serverNow = Math.max(serverNow, now);
    }
    if (malformed > 0) this.logger.warn({ type, events: malformed }, 'moved stored delayed events that are not entries; consumers dead-letter them as malformed');
    w.seq = seq;
    w.fullAt = fullAt;
    // A partition that moved a full LIMIT may have more due already: its scripts run again at once.
    w.nextDue = full ? -Infinity : Math.min(w.nextDue, nextDue);
    return full ? 0 : Math.max(0, Math.min(POLL_MS, w.nextDue - serverNow));
  }

  /** The XADD trimming args of the type's stream, as the publisher writes them (publisher.ts). */
  private trimArgs(type: string): (string | number)[] {
    const topic = this.config.topics[type];
    const minIdAgeMs = topic?.minIdAgeMs ?? (topic?.maxLen === undefined ? this.config.minIdAgeMs : undefined);
    if (minIdAgeMs !== undefined) return ['MINID', '~', String(Math.max(0, this.clock.now(Date.now()) - minIdAgeMs))];
    const maxLen = topic?.maxLen ?? this.config.maxLen;
    return maxLen > 0 ? ['MAXLEN', '~', String(maxLen)] : [];
  }
}
