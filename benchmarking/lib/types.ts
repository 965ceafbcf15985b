/**
 * Shared shapes of the benchmark framework: the run configuration, scenarios, variants and results.
 */

/** Transport names as given on the command line (`redis` is the `redis-streams` transport). */
export type TransportName = 'redis' | 'native' | 'memory' | 'noop';
export const TRANSPORTS: readonly TransportName[] = ['redis', 'native', 'memory', 'noop'];

/** Everything a run is parameterised by; every CLI flag maps to one field. */
export interface BenchConfig {
  transport: TransportName;
  messageCount: number;
  /** Bytes of the JSON-encoded payload. */
  messageSize: number;
  /** Batcher `maxEvents`; 1 turns batching off. */
  batchSize: number;
  /** Batcher `maxWaitMs`; 0 is adaptive. */
  flushInterval: number;
  publishers: number;
  consumers: number;
  partitions: number;
  /** Events per second for open-loop scenarios; 0 means closed loop (as fast as possible). */
  rate: number;
  /** Seconds, for duration-bound scenarios (0: bound by message count). */
  duration: number;
  iterations: number;
  warmup: number;
  redisUrl: string;
  /** Extra transport options (`--transport-option key=value`), passed through to the transport block. */
  transportOptions: Record<string, unknown>;
  /** Key prefix of this run in Redis; set by the runner. */
  keyPrefix: string;
}

export type ConfigKey = keyof BenchConfig;

/** Config fields set by flags that only some scenarios read (`Scenario.takes`). */
export type ScenarioFlag = 'messageCount' | 'messageSize' | 'batchSize' | 'flushInterval' | 'publishers' | 'consumers' | 'partitions' | 'rate' | 'duration';

export type VariantKind = 'eventlane' | 'baseline' | 'peer';

/** One measured configuration of a scenario (a row of its report). */
export interface Variant {
  /** Stable id, unique within the scenario, e.g. `batched-1p`. */
  id: string;
  label: string;
  /**
   * `eventlane` measures the library; `baseline` a hand-written equivalent; `peer` another library a Node team
   * would pick instead (benchmarking/peers/), driven the fastest way its documentation gives.
   */
  kind: VariantKind;
  /** Name of the scenario runner function that measures it. */
  runner: string;
  /** The configuration this variant runs with (scenario defaults, flags and the variant's own values). */
  config: BenchConfig;
  /** Variant-specific parameters (e.g. `{ mode: 'publishMany' }`). */
  params: Record<string, string | number | boolean>;
  /** Id of the baseline variant this one is compared with (ratio ours / baseline). */
  baseline?: string;
  /** The reference figure for this configuration (benchmarking/references.ts). */
  seed?: SeedFigure;
}

export interface SeedFigure {
  source: string;
  /** Throughput in events/s, when the reference has one. */
  throughput?: number;
  /** Latency percentiles in microseconds, when the reference has them. */
  latencyUs?: Partial<Record<'min' | 'mean' | 'p50' | 'p90' | 'p99' | 'p99.9' | 'max', number>>;
  note?: string;
  /**
   * The seed's own setup where it matters to its figure: a run whose configuration differs in any of these
   * gets no ratio to the seed (the report says "setup differs" and names the difference).
   */
  setup?: Partial<Pick<BenchConfig, 'transport' | 'messageCount' | 'rate'>>;
}

export interface LatencySummary {
  count: number;
  minUs: number;
  meanUs: number;
  p50Us: number;
  p90Us: number;
  p99Us: number;
  p999Us: number;
  maxUs: number;
  /** `[percentile, microseconds]` points for percentile curves. */
  curve: [number, number][];
  /** `open` (constant rate, measured from intended send time) or `closed` (burst / as fast as possible). */
  loop: 'open' | 'closed';
  /**
   * An iteration's HdrHistogram (ns), hdr-histogram-js `encodeIntoCompressedBase64`: it travels from the
   * child process in the iteration result, and the summary over the iterations adds them up.
   */
  histogram?: string;
  /**
   * Summaries over iterations only: `histogram` when the iterations' histograms were added into one (the
   * percentiles of all the run's events); `iteration-mean` when some iteration had none (older reports), so
   * the percentiles, mean and curve are means of the iterations' own (min and max: of their minima and maxima).
   */
  merge?: 'histogram' | 'iteration-mean';
}

/** What a scenario runner returns for one iteration. */
export interface Measured {
  /** Events counted in the timed window (the throughput numerator). */
  events: number;
  sent: number;
  /** Delivered events, or null when the scenario does not consume (publish-only). */
  received: number | null;
  /** Distinct events received; `sent - unique` were lost, `received - unique` duplicated (see `unmatched`). */
  unique?: number;
  /**
   * Deliveries (counted in `received`) that the runner could not match to a publish: the native latency runs'
   * order probe, for a worker whose count or order check failed. Neither delivered (`unique`) nor known to be
   * duplicates: lost = sent - unique - unmatched and duplicated = what the counts prove at least (see
   * `deliveryCounts`); a run with any is not verified.
   */
  unmatched?: number;
  /** Payload bytes moved in the timed window. */
  bytes?: number;
  latency?: LatencySummary;
  /** Scenario-specific figures (e.g. `peakWindowThroughput`). */
  extra?: Record<string, number>;
  notes?: string[];
  /** How delivery was checked, e.g. "XLEN x entry size" or "consumer group read-back". */
  verifiedBy?: string;
  /**
   * Where the runner knows it better than the timed window: how long the events took (the burst machine floor
   * idles 50 ms inside its timed call before it sends). Throughput and `durationMs` use it; CPU% stays over
   * the whole window.
   */
  windowMs?: number;
}

/** One iteration as reported. */
export interface IterationResult extends Measured {
  warmup: boolean;
  durationMs: number;
  throughput: number;
  mbPerSec?: number;
  cpuUserMs: number;
  cpuSystemMs: number;
  /** (user + system) / wall, in percent of one core. */
  cpuPercent: number;
  peakRssMb: number;
  heapAfterGcMb: number | null;
  lost: number | null;
  duplicated: number | null;
  pid: number;
}

export interface Spread {
  mean: number;
  min: number;
  max: number;
  /** The middle value (the mean of the middle two for an even count); absent in reports written without it. */
  median?: number;
  /** (max - min) / mean, in percent. */
  spreadPct: number;
}

export interface VariantResult {
  id: string;
  label: string;
  kind: Variant['kind'];
  params: Variant['params'];
  config: BenchConfig;
  seed?: SeedFigure;
  baseline?: string;
  iterations: IterationResult[];
  warmups: IterationResult[];
  summary: {
    throughput: Spread;
    durationMs: Spread;
    peakRssMb: Spread;
    cpuPercent: Spread;
    p50Us?: Spread;
    p99Us?: Spread;
    /** Latency over the measured iterations: their histograms added into one (see `LatencySummary.merge`). */
    latency?: LatencySummary;
  };
  /** `unmatched`: deliveries not matched to a publish (`Measured.unmatched`), present when there were any; `ok` is false then. */
  delivery: { sent: number; received: number | null; lost: number | null; duplicated: number | null; unmatched?: number; ok: boolean; verifiedBy?: string };
  /**
   * Throughput over the baseline's; for latency rows, p50 and p99 over the baseline's (lower is better): of the
   * merged figures (`latencyP50VsBaseline`), and of the medians of the iterations' own percentiles
   * (`...Median`), which one slow iteration does not move.
   */
  ratios: {
    vsBaseline?: number;
    vsSeed?: number;
    latencyP99VsSeed?: number;
    latencyP50VsBaseline?: number;
    latencyP99VsBaseline?: number;
    latencyP50VsBaselineMedian?: number;
    latencyP99VsBaselineMedian?: number;
  };
  /** Where the run's setup differs from the seed's (`SeedFigure.setup`), e.g. "messageCount 300 (reference 15000)": no ratio to the reference then. */
  seedSetupDiffers?: string;
  error?: string;
}

export interface ScenarioResult {
  scenario: string;
  title: string;
  seed: string;
  transport: TransportName;
  config: BenchConfig;
  variants: VariantResult[];
  skipped?: string;
  /** Id of the variant the verdict is about (`Scenario.headline`). */
  headline?: string;
  startedAt: string;
  wallMs: number;
  /** False when the iterations ran in the CLI's own process (`--no-fork`); absent in older reports: forked. */
  forked?: boolean;
}

/** Context a runner gets inside the (child) process. */
export interface RunContext {
  variant: Variant;
  config: BenchConfig;
  /** Runs `fn` as the timed window: wall time, CPU time and peak RSS are taken around it only. */
  timed<T>(fn: () => Promise<T>): Promise<T>;
  /** Iteration index (warmups first) — handy for unique Redis keys. */
  iteration: number;
  /**
   * A warmup iteration: publish-only runners skip their read-back verification, whose memory would
   * otherwise still be resident when the measured window of the same process starts (peak RSS).
   */
  warmup: boolean;
}

export type Runner = (ctx: RunContext) => Promise<Measured>;

export interface Scenario {
  name: string;
  /** The report's heading; a function when it names figures the flags change (event count, rate). */
  title: string | ((c: BenchConfig) => string);
  /** The reference systems compared with, as ids of benchmarking/references.ts separated by ', '. */
  seed: string;
  description: string;
  /** Transports this scenario runs on; the first is its default. */
  transports: TransportName[];
  /**
   * The run flags this scenario reads (besides --transport, --iterations, --warmup, --redis-url and
   * --transport-option, which every scenario takes): `run` refuses any other, `suite` applies a flag only to
   * the scenarios that take it.
   */
  takes: readonly ScenarioFlag[];
  /** The configuration of the reference figures. */
  defaults: Partial<BenchConfig>;
  /** Shorter settings used by the default suite (`npm run benchmark` with no flags). */
  quick?: Partial<BenchConfig>;
  /** Id of the variant the scenario's verdict and summary row are about (default: the first library row with a ratio). */
  headline?: string;
  /** The configurations measured; flags the user set explicitly collapse the scenario's sweeps. */
  variants(config: BenchConfig, explicit: ReadonlySet<ConfigKey>): Variant[];
  runners: Record<string, Runner>;
}

/** The scenario's title for the configuration it ran with. */
export function scenarioTitle(scenario: Scenario, c: BenchConfig): string {
  return typeof scenario.title === 'function' ? scenario.title(c) : scenario.title;
}
