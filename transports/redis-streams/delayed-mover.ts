/**
 * Moves due delayed events of the types this process schedules on or subscribes to into their partition
 * streams (`moveDue`, delayed-scripts.ts). Lifecycle: `idle` (no type yet) -> `waiting` (a timer set) <->
 * `moving` (one script per partition in flight) -> `closed`. It sleeps until the earliest due time it saw,
 * at most `POLL_MS`, so events other processes schedule are moved within that; a `schedule` here that is due
 * sooner wakes it early. A pass that moved a full `LIMIT` from a partition runs again at once.
 */
import { describeError } from '../../src/errors.js';
import type { Logger } from '../../src/logger.js';
import type { ResolvedConfig } from './config.js';
import type { Client } from './connection.js';
import { moveDue } from './delayed-scripts.js';
import { delayedDataKey, delayedKey, streamKey } from './keys.js';
import type { ServerClock } from './server-clock.js';

/** Longest sleep between passes: the bound on how late another process's event is seen. */
export const POLL_MS = 50;
/** Most events one script moves from one partition. */
const LIMIT = 500;

type State = 'idle' | 'waiting' | 'moving' | 'closed';

export class DelayedMover {
  private readonly types = new Set<string>();
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
    this.types.add(type);
    if (this.state === 'idle') this.sleep(0);
  }

  /** An event due at `score` (Redis ms) was scheduled here: the next pass runs by then. */
  wake(score: number): void {
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

  /** One script per partition of every type; resolves with how long to sleep. */
  private async moveAll(): Promise<number> {
    const runs: Promise<unknown>[] = [];
    const prefix = this.config.prefix;
    for (const type of this.types) {
      const trim = this.trimArgs(type);
      for (let p = 0; p < this.partitionsFor(type); p++) {
        runs.push(moveDue.runKeys(this.client, [delayedKey(prefix, type, p), delayedDataKey(prefix, type, p), streamKey(prefix, type, p)], [LIMIT, ...trim]));
      }
    }
    let sleep = POLL_MS;
    for (const reply of (await Promise.all(runs)) as [number, number, number][]) {
      const [moved, nextDue, now] = reply.map(Number) as [number, number, number];
      this.moved += moved;
      if (moved >= LIMIT) sleep = 0;
      else if (nextDue >= 0) sleep = Math.min(sleep, Math.max(0, nextDue - now));
    }
    return sleep;
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
