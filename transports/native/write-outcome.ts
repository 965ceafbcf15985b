/**
 * The outcome of one native `write()` of several units: each unit's error (undefined for one written whole)
 * and how many of its first events were written before it failed, the pushes still waiting for room that the
 * write settles after, and the units the retained history holds while such a push may still fail. A unit whose
 * waiting push fails takes back from the history what it failed to write, so a group created later does not
 * replay events whose publish rejected.
 */
import type { WriteResult, WriteSettlement } from '../../src/transport.js';
import type { PushShortfall } from './blocked-rings.js';
import type { History, HistoryMark } from './history.js';
import type { EncodedBatch } from './record.js';

/** A unit of a write still waiting for room, and where the history holds it. */
interface RetainedUnit {
  readonly u: number;
  readonly history: History;
  readonly mark: HistoryMark;
}

export class WriteOutcome {
  private results: (Error | undefined)[] | undefined;
  /** Per failed unit, how many of its first events were written; undefined while every failure wrote none. */
  private written: number[] | undefined;
  private waits: Promise<void>[] | undefined;
  private retained: RetainedUnit[] | undefined;
  private until = 0;

  constructor(
    private readonly units: number,
    private readonly publishTimeoutMs: number,
    /** Where a unit written in part is reported (`WriteSettlement.failed`). */
    private readonly settle: WriteSettlement,
  ) {}

  /**
   * When a push that must wait for room gives up: publishTimeoutMs after the first push of this write that
   * waits, also one that first queues behind earlier writes (their timeouts must not add up).
   */
  deadline(): number {
    return (this.until ||= Date.now() + this.publishTimeoutMs);
  }

  /** Pushes waiting so far. */
  get waiting(): number {
    return this.waits?.length ?? 0;
  }

  /** Unit `u` failed, after its first `written` events were written. */
  fail(u: number, err: Error, written = 0): void {
    (this.results ??= new Array<Error | undefined>(this.units).fill(undefined))[u] = err;
    if (written > 0 || this.written !== undefined) (this.written ??= new Array<number>(this.units).fill(0))[u] = written;
  }

  /**
   * A push of unit `u` waiting for room: the write settles after it, and its shortfall (or failure) fails the
   * unit. With several groups the unit's error is the one that wrote the fewest of its events.
   */
  awaitPush(u: number, p: Promise<PushShortfall | undefined>): void {
    const failed = (err: Error, written: number): void => {
      if (this.results?.[u] === undefined || written < (this.written?.[u] ?? 0)) this.fail(u, err, written);
    };
    (this.waits ??= []).push(
      p.then(
        (short) => {
          if (short !== undefined) failed(short.err, short.written);
        },
        (err: Error) => failed(err, 0),
      ),
    );
  }

  /** Adds unit `u` to `history`, remembered when a push of it began waiting since `waited` (`waiting` before its pushes). */
  retain(u: number, history: History, batch: EncodedBatch, waited: number): void {
    history.add(batch);
    // A unit still waiting for room: what it fails to write is taken back once it settles.
    const mark = this.waiting > waited ? history.mark(batch.n) : undefined;
    if (mark !== undefined) (this.retained ??= []).push({ u, history, mark });
  }

  /** The write's result: at once when no push waits, else once every waiting push has settled. */
  result(): Promise<WriteResult> | WriteResult {
    if (this.waits) return Promise.all(this.waits).then(() => this.settled());
    return this.results;
  }

  /**
   * The results of a write that waited: the events a unit failed to write leave the retained history, so a
   * group created later does not replay events whose publish rejected (and that the caller may publish again);
   * then a unit written in part is reported with how many of its events were written (its entry in the
   * result is then ignored).
   */
  private settled(): (Error | undefined)[] | undefined {
    const { results, retained, written } = this;
    if (results === undefined) return results;
    if (retained !== undefined) {
      for (const { u, history, mark } of retained) {
        if (results[u] !== undefined) history.forget(mark, written?.[u] ?? 0);
      }
    }
    if (written !== undefined) {
      for (let u = 0; u < results.length; u++) {
        const err = results[u];
        if (err !== undefined && written[u]! > 0) this.settle.failed(u, err, written[u]);
      }
    }
    return results;
  }
}
