/**
 * Moves due delayed events of the types this process schedules on or subscribes to into their partition
 * streams (`moveDue`, delayed-scripts.ts). Lifecycle: `idle` (no type yet) -> `waiting` (a timer set) <->
 * `moving` (a pass in flight) -> `closed`.
 *
 * A pass runs at least every `POLL_MS`, and sooner when an event it knows of comes due. It reads each type's
 * schedule counter (`delayedSeqKey`, one GET per type), which every scheduling write raises after storing its
 * events, and runs the type's scripts (one per partition) only when something may be due there:
 * - the counter changed since the type's last scripts (another process, or this one, scheduled events);
 * - the earliest due time the last scripts reported (or a `wake` here) has come;
 * - `FULL_PASS_MS` went by without scripts: events whose writer stopped between storing them and raising the
 *   counter (a crash) are moved within that.
 * The counter is read before the scripts run: an event stored after a partition's script ran raises it after
 * that read, so the next pass runs the scripts again. A pass that moved a full `LIMIT` from a partition runs
 * again at once.
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
  /** The schedule counter read before them (undefined: not run yet; null: the counter does not exist). */
  seq: string | null | undefined;
  /** Earliest due time (Redis ms) of an event left scheduled, or Infinity. */
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
  /** Set by `wake` while `moving`: the pass runs again at once. */
  private again = false;
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

  /** An event of `type` due at `score` (Redis ms) was scheduled here: the next pass runs its scripts by then. */
  wake(type: string, score: number): void {
    const w = this.types.get(type);
    if (w !== undefined) w.nextDue = Math.min(w.nextDue, score);
    if (this.state === 'moving') this.again = true;
    if (this.state !== 'waiting') return;
    const at = score - this.clock.now(Date.now()) + Date.now();
    if (at < this.wakeAt) this.sleep(Math.max(0, at - Date.now()));
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
    this.again = false;
    let next = POLL_MS;
    try {
      next = await this.moveAll();
      this.failing = false;
    } catch (err) {
      if (!this.failing) this.logger.warn({ err: describeError(err) }, 'could not move due delayed events; retrying');
      this.failing = true;
    }
    if ((this.state as State) === 'closed') return;
    this.sleep(this.again ? 0 : next);
  }

  /** Reads the counters, runs the scripts of the types that need them; resolves with how long to sleep. */
  private async moveAll(): Promise<number> {
    const types = [...this.types];
    const prefix = this.config.prefix;
    const seqs = await Promise.all(types.map(([type]) => this.client.get(delayedSeqKey(prefix, type))));
    const now = this.clock.now(Date.now());
    const runs: Promise<number>[] = [];
    let sleep = POLL_MS;
    types.forEach(([type, w], i) => {
      if (seqs[i] === w.seq && w.nextDue > now && Date.now() < w.fullAt) {
        sleep = Math.min(sleep, Math.max(1, w.nextDue - now));
        return;
      }
      runs.push(this.moveType(type, w, seqs[i] ?? null));
    });
    for (const s of await Promise.all(runs)) sleep = Math.min(sleep, s);
    return sleep;
  }

  /**
   * One script per partition of `type`; once they all succeeded, records the counter `seq` read before them and
   * what is left scheduled (after a failure the next pass runs them again), and resolves with how long to sleep.
   */
  private async moveType(type: string, w: TypeWatch, seq: string | null): Promise<number> {
    const prefix = this.config.prefix;
    const trim = this.trimArgs(type);
    const runs: Promise<unknown>[] = [];
    for (let p = 0; p < this.partitionsFor(type); p++) {
      runs.push(moveDue.runKeys(this.client, [delayedKey(prefix, type, p), delayedDataKey(prefix, type, p), streamKey(prefix, type, p)], [LIMIT, ...trim]));
    }
    const fullAt = Date.now() + FULL_PASS_MS;
    let full = false;
    let nextDue = Infinity;
    let serverNow = 0;
    let malformed = 0;
    for (const reply of (await Promise.all(runs)) as [number, number, number, number][]) {
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
    w.nextDue = full ? -Infinity : nextDue;
    return full ? 0 : Math.max(0, Math.min(POLL_MS, nextDue - serverNow));
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
