/**
 * Redis's clock, as seen from this process. `XADD ... MINID ~ <now - minIdAgeMs>` trims by entry id, and
 * entry ids carry the *server's* milliseconds: a MINID computed from a client clock that runs ahead trims
 * entries consumers have not read yet, and one that runs ahead by more than minIdAgeMs trims every entry,
 * the one being added included (XADD still returns its id: the publish "succeeds" and the event is gone).
 * So the offset to the server's clock is measured with TIME (at connect, then once a minute in the
 * background) and MINID is computed in server time.
 */
import type { Logger } from '../../src/logger.js';
import type { Client } from './connection.js';

/** How often the offset is measured again (clocks drift, NTP steps them). */
const RESYNC_MS = 60_000;
/** TIME round trips per measurement: the shortest bounds the offset tightest (a first command on a cold connection can take 10s of ms). */
const SAMPLES = 3;

/** One TIME: local ms before and after it, and the server's ms (to the microsecond) it read in between. */
interface Sample {
  sent: number;
  back: number;
  server: number;
}

export class ServerClock {
  /** Server ms minus local ms, from the last measurement (whole ms: MINID ids are integers). */
  private offset = 0;
  /** The most server ms minus local ms can be, from the last measurement: the server read its clock after `sent`. */
  private offsetHigh = 0;
  private syncedAt = -Infinity;
  private syncing: Promise<void> | undefined;
  private warned = false;

  constructor(
    private readonly client: Client,
    private readonly logger: Logger,
  ) {}

  /** Measures the offset now; a failure (an ACL without TIME, a dead connection) keeps the last one, with one warning. */
  sync(): Promise<void> {
    this.syncing ??= this.measure().finally(() => (this.syncing = undefined));
    return this.syncing;
  }

  private async measure(): Promise<void> {
    try {
      let best = await this.sample();
      for (let i = 1; i < SAMPLES; i++) {
        const s = await this.sample();
        if (s.back - s.sent < best.back - best.sent) best = s;
      }
      // The server read its clock somewhere in the round trip: assume the middle.
      this.offset = Math.round(best.server - (best.sent + best.back) / 2);
      // `sent` is Date.now(), at or before the true local time it was read at; a microsecond for TIME's rounding down.
      this.offsetHigh = best.server + 0.001 - best.sent;
      this.syncedAt = best.back;
      if (Math.abs(this.offset) > 1000) {
        this.logger.warn({ offsetMs: this.offset }, "this host's clock differs from Redis's by more than a second; MINID trimming uses Redis's");
      }
    } catch (err) {
      this.syncedAt = Date.now(); // not again before RESYNC_MS
      if (!this.warned) {
        this.warned = true;
        this.logger.warn({ err: err instanceof Error ? err.message : String(err) }, "could not read Redis's clock (TIME); MINID trimming uses this host's clock");
      }
    }
  }

  private async sample(): Promise<Sample> {
    const sent = Date.now();
    const [s, us] = (await this.client.time()) as [string | number, string | number];
    return { sent, back: Date.now(), server: Number(s) * 1000 + Number(us) / 1000 };
  }

  /**
   * The latest the server's clock (ms, to the microsecond) can read when this host's reads `localMs`: a due time
   * converted with it is never reached on the server before it is here (delayed delivery).
   */
  latest(localMs: number): number {
    this.now(localMs);
    return localMs + this.offsetHigh;
  }

  /** The server's time for local time `localMs` (Date.now()); starts a background re-measure when due. */
  now(localMs: number): number {
    if (localMs - this.syncedAt > RESYNC_MS && this.syncing === undefined) void this.sync();
    return localMs + this.offset;
  }
}
