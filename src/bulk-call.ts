/**
 * What a `publishMany` call keeps while its events are queued: the validated payloads, the promise of every
 * unit carrying some of them, and which unit carries which event, so that a call the transport refused part
 * of can name the payloads not written (`PublishPartialError`).
 */
import { emptyObjectArray } from './arrays.js';
import { PublishPartialError } from './errors.js';
import { writtenBeforeFailure } from './batch-units.js';

function noop(): void {}

export class BulkCall {
  /** The validated payloads, their encodings where the transport wants JSON, sizes and keys; released as queued. */
  readonly values: unknown[];
  readonly jsons: (string | undefined)[];
  readonly sizes: Float64Array;
  readonly keys: (string | undefined)[] | undefined;
  /** Whether some payload was encoded at publish (`jsons` holds a string). */
  encoded = false;
  /**
   * For a call written as bytes at publish (`TransportCapabilities.input` `runBytes`; then `values` and `jsons` are
   * empty): the buffer, and where each event's record ends in it (the next one starts there).
   */
  bytes: Buffer | undefined = undefined;
  readonly ends: Uint32Array | undefined;
  /**
   * Per stretch of the call's events that follow each other in one unit, the unit's promise, in the order met.
   * A unit carrying other publishes between the call's events holds several stretches (its promise repeated).
   */
  readonly pending: Promise<void>[] = emptyObjectArray();
  /** Per entry of `pending`: where in its unit the stretch starts (how many of the unit's events come before). */
  private readonly firsts: number[] = [];
  /** With one partition: the index of the first event each stretch carries (a stretch carries a run of events). */
  private readonly starts: number[] = [];
  /** With several partitions: per event, the index in `pending` of its stretch. */
  private readonly carrier: Int32Array | undefined;
  /**
   * Per partition, the last unit met, its stretch's index in `pending`, and where in the unit the stretch's
   * next event would be. A unit's promise is per lane, and a lane's later unit never hands back an earlier one,
   * so comparing with the last is enough.
   */
  private readonly lastOf: (Promise<void> | undefined)[];
  private readonly lastAt: number[];
  private readonly nextIn: number[];

  constructor(
    readonly size: number,
    /** The type's partition count when the call began: the whole call is routed over it (a raise meanwhile applies to later calls). */
    readonly partitions: number,
    /** Whether each event has a key of its own (a `key` function). */
    keyed: boolean,
    /** The payloads are written as bytes (`bytes`, `ends`), not kept as values. */
    written = false,
  ) {
    this.values = written ? [] : new Array(size);
    this.jsons = written ? [] : new Array(size);
    this.ends = written ? new Uint32Array(size) : undefined;
    this.sizes = new Float64Array(size);
    this.keys = keyed ? new Array(size) : undefined;
    // One partition keeps nothing per event (a per-event store is a cost every publishMany would pay).
    this.carrier = partitions > 1 ? new Int32Array(size) : undefined;
    this.lastOf = new Array(partitions).fill(undefined);
    this.lastAt = new Array<number>(partitions).fill(0);
    this.nextIn = new Array<number>(partitions).fill(0);
  }

  /** Events `from..to` (a run), queued in partition `part`, are events `at..` of a unit that settles with `p`. */
  trackRun(from: number, to: number, part: number, p: Promise<void>, at: number): void {
    this.track(from, part, p, at);
    this.nextIn[part] = at + to - from;
    if (this.carrier !== undefined) this.carrier.fill(this.lastAt[part]!, from + 1, to);
  }

  /** Event `i`, queued in partition `part`, is event `at` of a unit that settles with `p`. */
  track(i: number, part: number, p: Promise<void>, at: number): void {
    if (p !== this.lastOf[part] || at !== this.nextIn[part]) {
      if (p !== this.lastOf[part]) p.catch(noop); // awaited by the bus; marked handled so an early failure is not "unhandled"
      this.lastOf[part] = p;
      this.lastAt[part] = this.pending.push(p) - 1;
      this.firsts.push(at);
      if (this.carrier === undefined) this.starts.push(i);
    }
    this.nextIn[part] = at + 1;
    if (this.carrier !== undefined) this.carrier[i] = this.lastAt[part]!;
  }

  /**
   * The error of a call some unit of which failed, once all have settled (`Promise.allSettled(pending)`):
   * the transport's own error when none of the call was written, else a `PublishPartialError` (undefined
   * when the failed units had written all their events after all).
   */
  failure(type: string, settled: PromiseSettledResult<void>[]): Error | undefined {
    const carrier = this.carrier ?? this.runCarriers();
    const failed: number[] = [];
    const errors: Error[] = [];
    // A unit that failed after its first events were written (`WriteSettlement.failed`) wrote its events before
    // that count, in unit order: an event of the call was written when its place in the unit (its stretch's
    // start and the stretch's events met so far) is below it.
    const seen = new Int32Array(settled.length);
    const firsts = this.firsts;
    const written = this.pending.map(writtenBeforeFailure);
    for (let i = 0; i < carrier.length; i++) {
      const c = carrier[i]!;
      const r = settled[c]!;
      if (r.status === 'fulfilled') continue;
      const err = r.reason as Error;
      if (firsts[c]! + seen[c]!++ < written[c]!) continue;
      failed.push(i);
      // Distinct failures: per-event writes refused for one reason (WRONGTYPE on a partition) are one.
      if (!errors.some((e) => e === err || (e?.constructor === err?.constructor && e?.message === err?.message))) errors.push(err);
    }
    if (failed.length === 0) return undefined; // every failed unit said all its events were written
    if (failed.length === carrier.length) return errors[0]!;
    return new PublishPartialError(type, failed, carrier.length - failed.length, errors);
  }

  /** Per event, its stretch, when stretch `k` carries events `starts[k]` up to the next stretch's start. */
  private runCarriers(): Int32Array {
    const { starts, size } = this;
    const carrier = new Int32Array(size);
    for (let k = 0; k < starts.length; k++) carrier.fill(k, starts[k]!, k + 1 < starts.length ? starts[k + 1]! : size);
    return carrier;
  }
}
