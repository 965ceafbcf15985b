/**
 * What the collector counts, in plain structures of its own: per label set a record of numbers and bucket
 * counts, found through nested Maps (type, then group or code), so that counting builds no string and hashes
 * no label object. The collector reads them at scrape time (src/prometheus/own-metrics.ts).
 *
 * Why not prom-client's `Counter` and `Histogram`: their `inc` and `observe` hash the label object on every
 * call (through `labels()` children too), a cost on the path of every event published and handled. The
 * benchmark that measures it against nothing subscribed: `node .bench-build/benchmarking/cli.js run --scenario
 * observability-overhead --transport noop` (after `node scripts/build-bench.mjs`).
 */

/** Observations of one label set: a count per bucket (not cumulative: the last is above every bound), sum and count. */
export class Buckets {
  readonly counts: Float64Array;
  sum = 0;
  count = 0;

  constructor(readonly bounds: readonly number[]) {
    this.counts = new Float64Array(bounds.length + 1);
  }

  observe(v: number): void {
    const bounds = this.bounds;
    let i = 0;
    while (i < bounds.length && v > bounds[i]!) i++;
    this.counts[i]!++;
    this.sum += v;
    this.count++;
  }

  clear(): void {
    this.counts.fill(0);
    this.sum = 0;
    this.count = 0;
  }
}

/** The publish side of one event type. */
export class PublishTally {
  /** Events written. */
  written = 0;
  /** Events failed, by code. */
  readonly failures = new Map<string, number>();
  /** Per unit, seconds from the hand-off of its write to its settlement. */
  readonly writes: Buckets;

  constructor(durationBounds: readonly number[]) {
    this.writes = new Buckets(durationBounds);
  }

  fail(code: string, events: number): void {
    this.failures.set(code, (this.failures.get(code) ?? 0) + events);
  }
}

/** The outcomes of handler runs, as `eventlane_events_processed_total` labels them, in `GroupTally.outcomes` order. */
export const OUTCOMES = ['ack', 'retry', 'dead_letter'] as const;

/** The consume side of one (type, group). */
export class GroupTally {
  /** Runs per outcome, in `OUTCOMES` order. */
  readonly outcomes = new Float64Array(OUTCOMES.length);
  /** Handler run times, in seconds (runs whose time was measured). */
  readonly runs: Buckets;

  constructor(durationBounds: readonly number[]) {
    this.runs = new Buckets(durationBounds);
  }
}

export class Tallies {
  /** By event type. */
  readonly publish = new Map<string, PublishTally>();
  /** By event type, then group. */
  readonly groups = new Map<string, Map<string, GroupTally>>();
  /** Events per unit. */
  readonly batches: Buckets;
  /** The (type, group) last counted, and its tally: a run of one group's outcomes looks nothing up. */
  private lastType: string | undefined = undefined;
  private lastGroup: string | undefined = undefined;
  private last: GroupTally | undefined = undefined;

  constructor(
    readonly durationBounds: readonly number[],
    batchBounds: readonly number[],
  ) {
    this.batches = new Buckets(batchBounds);
  }

  publishOf(type: string): PublishTally {
    let t = this.publish.get(type);
    if (t === undefined) this.publish.set(type, (t = new PublishTally(this.durationBounds)));
    return t;
  }

  groupOf(type: string, group: string): GroupTally {
    if (type === this.lastType && group === this.lastGroup) return this.last!;
    let byGroup = this.groups.get(type);
    if (byGroup === undefined) this.groups.set(type, (byGroup = new Map()));
    let t = byGroup.get(group);
    if (t === undefined) byGroup.set(group, (t = new GroupTally(this.durationBounds)));
    this.lastType = type;
    this.lastGroup = group;
    this.last = t;
    return t;
  }
}
