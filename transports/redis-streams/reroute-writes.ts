/**
 * A subscription's retry/DLQ writes (of a failed event, or of a whole entry: malformed, crash loop, split)
 * run until they go through. While Redis refuses writes for now, one write at a time probes it with growing
 * waits and the others wait for that probe, so Redis sees one refused write per wait, not one per failed
 * event. A write is given up (its entry stays pending) when the refusal is not a passing one, at close, or
 * once its entry is no longer this consumer's.
 */
import { backoffDelay } from '../../src/backoff.js';
import { describeError } from '../../src/errors.js';
import { isTransientWriteError, TRANSIENT_RETRY } from './connection.js';
import type { ConsumerContext } from './consumer-records.js';

export class RerouteWrites {
  /**
   * While Redis refuses retry/DLQ writes for now: settles when the write tried again for all (the probe, see
   * `persist`) went through or was given up. Other refused writes wait for it instead of each trying on its own.
   */
  private probing: Promise<void> | undefined;

  constructor(private readonly ctx: ConsumerContext) {}

  /**
   * Runs a retry/DLQ write until it succeeds. One Redis refuses for now (OOM at maxmemory, a failover, a lost
   * connection: `isTransientWriteError`) is tried again while the subscription is open and `mine()` (the
   * entry is still this consumer's: the keepalive keeps it so): the first refused write becomes the probe,
   * tried again 50 ms later, then waiting twice as long each time up to 2 s; writes refused meanwhile wait
   * for the probe, then try again themselves (so Redis sees one refused write per wait, not one per failed
   * event). Leaving the entry pending instead would have it reclaimed after minIdleMs with its delivery count
   * raised, as if a consumer had died on it: a long enough refusal (say, Redis full for a minute) then
   * dead-lettered whole batch entries, events their handlers had finished included. False when it gave up:
   * the entry stays pending.
   */
  async persist(write: () => Promise<unknown>, mine: () => boolean, id: string): Promise<boolean> {
    /** Set while this write is the probe: ends the others' wait. */
    let endProbe: (() => void) | undefined;
    let written = false;
    try {
      for (let probes = 0; ;) {
        let waited = true;
        if (endProbe !== undefined) await Promise.race([new Promise((resolve) => setTimeout(resolve, backoffDelay(TRANSIENT_RETRY, ++probes))), this.ctx.closeSignal]);
        else if (this.probing !== undefined) await this.probing;
        else waited = false;
        if (waited && (this.ctx.closing || !mine())) return false;
        try {
          await write();
          written = true;
          return true;
        } catch (e) {
          if (!isTransientWriteError(e) || this.ctx.closing || !mine()) {
            this.ctx.logger.warn({ group: this.ctx.spec.group, err: describeError(e), id }, 'could not write a failed event to the retry stream or DLQ; entry left pending');
            return false;
          }
          if (endProbe === undefined && this.probing === undefined) {
            this.ctx.logger.warn(
              { group: this.ctx.spec.group, err: describeError(e), id },
              'Redis refuses retry/DLQ writes for now; one is tried again until it goes through, the others wait (their entries stay pending on this consumer)',
            );
            this.probing = new Promise<void>((resolve) => (endProbe = resolve));
          }
        }
      }
    } finally {
      if (endProbe !== undefined) {
        this.probing = undefined;
        endProbe();
        if (written) this.ctx.logger.info({ group: this.ctx.spec.group }, 'retry/DLQ writes go through again');
      }
    }
  }
}
