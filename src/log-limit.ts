/**
 * Rate limiting of repeated log lines, so a failure storm cannot flood the log: per kind (a message), at most
 * `burst` lines per `windowMs`; the lines held back in a window are counted and reported in one line (with
 * the kind and the count) when the kind next logs after its window, or when the window's timer fires.
 */
import type { Logger } from './logger.js';

type Level = 'debug' | 'info' | 'warn' | 'error';

interface KindWindow {
  start: number;
  lines: number;
  suppressed: number;
  level: Level;
  timer: NodeJS.Timeout | undefined;
}

export interface LimitOptions {
  /** Lines of one kind let through per window. @default 10 */
  readonly burst?: number;
  /** @default 10000 */
  readonly windowMs?: number;
}

export class LimitedLog {
  private readonly kinds = new Map<string, KindWindow>();
  private readonly burst: number;
  private readonly windowMs: number;

  constructor(
    private readonly logger: Logger,
    opts: LimitOptions = {},
  ) {
    this.burst = opts.burst ?? 10;
    this.windowMs = opts.windowMs ?? 10_000;
  }

  /** Logs `msg` at `level` unless its kind (`msg`) already logged `burst` lines in this window. */
  log(level: Level, obj: object, msg: string): void {
    const now = Date.now();
    let w = this.kinds.get(msg);
    if (w === undefined || now - w.start >= this.windowMs) {
      if (w !== undefined) this.report(msg, w);
      w = { start: now, lines: 0, suppressed: 0, level, timer: undefined };
      this.kinds.set(msg, w);
    }
    if (w.lines < this.burst) {
      w.lines++;
      this.logger[level](obj, msg);
      return;
    }
    w.suppressed++;
    if (w.timer === undefined) {
      const kind = w;
      kind.timer = setTimeout(() => this.report(msg, kind), this.windowMs - (now - w.start));
      kind.timer.unref();
    }
  }

  /** Reports the lines of `w` held back, once. */
  private report(msg: string, w: KindWindow): void {
    clearTimeout(w.timer);
    w.timer = undefined;
    if (w.suppressed === 0) return;
    this.logger[w.level]({ suppressed: w.suppressed, kind: msg, windowMs: this.windowMs }, 'repeated log lines suppressed');
    w.suppressed = 0;
    if (this.kinds.get(msg) === w) this.kinds.delete(msg);
  }
}
