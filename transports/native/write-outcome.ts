/**
 * The outcome of one native `write()` of several units: each unit's error (undefined for one written whole),
 * the pushes still waiting for room that the write settles after, and the units the retained history holds
 * while such a push may still fail. A unit whose waiting push fails takes back from the history what it failed
 * to write, so a group created later does not replay events whose publish rejected.
 */
import { writtenCount, type WriteResult } from '../../src/transport.js';
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
  private waits: Promise<void>[] | undefined;
  private retained: RetainedUnit[] | undefined;
  private until = 0;

  constructor(
    private readonly units: number,
    private readonly publishTimeoutMs: number,
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

  /** Unit `u` failed. */
  fail(u: number, err: Error): void {
    (this.results ??= new Array(this.units).fill(undefined))[u] = err;
  }

  /**
   * A push of unit `u` waiting for room: the write settles after it, and its failure fails the unit. With
   * several groups the unit's error is the one that wrote the fewest of its events (`withWritten`).
   */
  awaitPush(u: number, p: Promise<void>): void {
    (this.waits ??= []).push(
      p.catch((err: Error) => {
        const r = (this.results ??= new Array(this.units).fill(undefined));
        const prev = r[u];
        if (prev === undefined || writtenCount(err) < writtenCount(prev)) r[u] = err;
      }),
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
   * The results of a write that waited: the events a unit failed to write (its error's `writtenCount` on)
   * leave the retained history, so a group created later does not replay events whose publish rejected
   * (and that the caller may publish again).
   */
  private settled(): (Error | undefined)[] | undefined {
    const { results, retained } = this;
    if (results === undefined || retained === undefined) return results;
    for (const { u, history, mark } of retained) {
      const err = results[u];
      if (err !== undefined) history.forget(mark, writtenCount(err));
    }
    return results;
  }
}
