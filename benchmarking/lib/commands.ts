/**
 * The CLI commands: preflight (transport available, Redis reachable), running, progress, output.
 */
import { accessSync, constants, existsSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import cliProgress from 'cli-progress';
import { renderHtml } from '../report/html.js';
import { checkMarkdownTarget, writeMarkdown } from '../report/markdown.js';
import { environment, SCHEMA, type BenchReport } from '../report/report.js';
import { renderTerminal, WIDTH, wrap } from '../report/terminal.js';
import { warnings } from '../report/rows.js';
import { runNotices } from '../report/notices.js';
import { scenarioReferences } from '../references.js';
import { DEFAULT_RESULTS_DIR, prepareResultsDir, saveReport } from './save.js';
import { findScenario, SCENARIOS, DEFAULT_SUITE } from '../scenarios/index.js';
import { assertTransportAvailable, assertTransportOptions, inProcessTransport } from './bus.js';
import { FLAG_NAMES, flagsTaken, isScenarioFlag, resolveConfig, UsageError } from './config.js';
import { flagsToConfig } from './flags.js';
import { redisVersion } from './redis.js';
import { runScenario, type RunOptions } from './runner.js';
import type { BenchConfig, ConfigKey, Scenario, ScenarioFlag, ScenarioResult, TransportName, VariantKind } from './types.js';
import { scenarioTitle } from './types.js';

/**
 * Commander's parsed options (cli.ts, flags.ts): the ones these commands read by name, typed as their parsers
 * produce them, and the scenario configuration flags, which flagsToConfig picks out by name.
 */
interface Opts {
  [flag: string]: unknown;
  quiet?: boolean;
  fork?: boolean;
  keepKeys?: boolean;
  withBaselines?: boolean;
  /** False with `--no-peers`. */
  peers?: boolean;
  iterationTimeout?: number;
  nodeOption?: string[];
  json?: string;
  markdown?: string;
  html?: string;
  /** False with --no-save. */
  save?: boolean;
  resultsDir?: string;
  all?: boolean;
  quick?: boolean;
}

/** The options `run` requires. */
type RunOpts = Opts & { scenario: string };
/** The options `matrix` has: its scenario and its sweep lists (each with a default). */
type MatrixOpts = Opts & { scenario: string; messageSizes: number[]; batchSizes: number[]; publisherCounts: number[] };
/** The options `report` requires. */
type ReportOpts = Opts & { from: string };

interface Planned {
  scenario: Scenario;
  config: BenchConfig;
  explicit: Set<ConfigKey>;
  /** Flags given that this scenario does not take (suite: left out of its config). */
  dropped?: ScenarioFlag[];
}

class Progress {
  private bar: cliProgress.SingleBar | undefined;
  private done = 0;
  private total = 0;
  constructor(private readonly quiet: boolean) {}
  start(label: string, total: number): void {
    this.total = total;
    this.done = 0;
    if (this.quiet) return;
    if (process.stderr.isTTY) {
      this.bar = new cliProgress.SingleBar({ format: ' {bar} {value}/{total} runs | {step}', stream: process.stderr, hideCursor: true, clearOnComplete: true }, cliProgress.Presets.shades_classic);
      this.bar.start(total, 0, { step: label });
    } else process.stderr.write(`> ${label} (${total} measured iteration(s))\n`);
  }
  step(label: string): void {
    this.done++;
    if (this.bar) this.bar.update(this.done, { step: label });
    else if (!this.quiet) process.stderr.write(`${`  ${this.done}/${this.total} ${label}`.slice(0, WIDTH)}\n`);
  }
  stop(): void {
    this.bar?.stop();
    this.bar = undefined;
  }
}

async function preflight(transport: TransportName, config: BenchConfig): Promise<string | null> {
  await assertTransportAvailable(transport);
  assertTransportOptions(config);
  return transport === 'redis' ? redisVersion(config.redisUrl) : null;
}

function runOptions(o: Opts, nodeOptions: string[]): RunOptions {
  const fork = o['fork'] !== false;
  if (!fork && nodeOptions.length > 0) {
    throw new UsageError('--node-option applies to the child processes of the iterations: it cannot be used with --no-fork (start node with the flag instead).');
  }
  return {
    fork,
    keepKeys: Boolean(o['keepKeys']),
    kinds: runKinds(o),
    iterationTimeoutMs: typeof o['iterationTimeout'] === 'number' ? o['iterationTimeout'] * 1000 : undefined,
    nodeOptions,
  };
}

/** Where the report is saved: undefined with --no-save or for a report without a `name` (a matrix cell). */
function saveDir(o: Opts, name: string | undefined): string | undefined {
  return name !== undefined && o.save !== false ? (o.resultsDir ?? DEFAULT_RESULTS_DIR) : undefined;
}

/** `name`: the saved report's file name after its time (the scenario, `suite`, ...); undefined: not saved. */
async function execute(plans: Planned[], o: Opts, strict: boolean, name: string | undefined, mutate?: (r: ScenarioResult) => void): Promise<BenchReport> {
  let redis: string | null = null;
  const loadAtStart = environment(null).loadAvg;
  const runs: ScenarioResult[] = [];
  const progress = new Progress(Boolean(o['quiet']));
  const nodeOptions: string[] = o['nodeOption'] ?? [];
  const runOpts = runOptions(o, nodeOptions);
  checkOutputTargets(o);
  const dir = saveDir(o, name);
  if (dir !== undefined) prepareResultsDir(dir);
  for (const p of plans) {
    try {
      redis = (await preflight(p.config.transport, p.config)) ?? redis;
    } catch (err) {
      if (strict || !(err instanceof UsageError)) throw err;
      runs.push(skipped(p, err.message));
      continue;
    }
    const r = await runScenario(p.scenario, p.config, p.explicit, {
      ...runOpts,
      onStart: (total) => progress.start(`${p.scenario.name} on ${p.config.transport}`, total),
      onStep: (label) => progress.step(label),
    }).finally(() => progress.stop());
    mutate?.(r);
    runs.push(r);
  }
  const report: BenchReport = {
    schema: SCHEMA,
    generatedAt: new Date().toISOString(),
    command: `npm run benchmark --${process.argv.slice(2).length ? ' ' + process.argv.slice(2).join(' ') : ''}`,
    environment: { ...environment(redis), loadAvg: loadAtStart, ...(nodeOptions.length ? { nodeOptions } : {}) },
    runs,
  };
  report.notices = runNotices(report);
  output(report, o, name);
  return report;
}

/** The kinds of rows a run measures: the library's only when baselines are off (matrix by default); peers unless --no-peers. */
function runKinds(o: Opts): VariantKind[] | undefined {
  if (o['withBaselines'] === false) return ['eventlane'];
  return o['peers'] === false ? ['eventlane', 'baseline'] : undefined;
}

function skipped(p: Planned, reason: string): ScenarioResult {
  return {
    scenario: p.scenario.name,
    title: scenarioTitle(p.scenario, p.config),
    seed: p.scenario.seed,
    transport: p.config.transport,
    config: p.config,
    variants: [],
    skipped: reason,
    startedAt: new Date().toISOString(),
    wallMs: 0,
  };
}

/**
 * Refuses, before anything runs, an output file that could not be written at the end (a full `matrix` or
 * `suite --all` takes tens of minutes): its directory missing or not writable, the file not writable, a
 * `--markdown` file with one results marker and not the other.
 */
function checkOutputTargets(o: Opts): void {
  for (const flag of ['json', 'markdown', 'html'] as const) {
    const file = o[flag];
    const problem = file ? unwritable(resolve(file)) : undefined;
    if (problem !== undefined) throw new UsageError(`--${flag} ${file}: ${problem}; nothing was run.`);
  }
  if (o['markdown']) checkMarkdownTarget(o['markdown']);
}

/** Why `path` could not be written, or undefined. */
function unwritable(path: string): string | undefined {
  const dir = dirname(path);
  if (!existsSync(dir)) return `its directory ${dir} does not exist`;
  if (!statSync(dir).isDirectory()) return `${dir} is not a directory`;
  const exists = existsSync(path);
  if (exists && statSync(path).isDirectory()) return 'it is a directory';
  try {
    accessSync(exists ? path : dir, constants.W_OK);
  } catch {
    return exists ? 'the file is not writable' : `its directory ${dir} is not writable`;
  }
  return undefined;
}

function output(report: BenchReport, o: Opts, name?: string): void {
  process.stdout.write(renderTerminal(report) + '\n');
  // Each file on its own: one that fails (the disk filled up meanwhile) does not cost the others.
  const writes: ['json' | 'markdown' | 'html', (file: string) => void][] = [
    ['json', (file) => writeFileSync(file, JSON.stringify(report, null, 2) + '\n')],
    ['markdown', (file) => writeMarkdown(file, report)],
    ['html', (file) => writeFileSync(file, renderHtml(report))],
  ];
  for (const [flag, write] of writes) {
    const file = o[flag];
    if (!file) continue;
    try {
      write(file);
    } catch (err) {
      process.stderr.write(`error: --${flag} ${file}: ${err instanceof Error ? err.message : String(err)}\n`);
      process.exitCode = 1;
    }
  }
  const dir = saveDir(o, name);
  if (dir !== undefined) {
    try {
      const paths = saveReport(report, dir, name!);
      process.stdout.write(`\nsaved: ${paths.join('\n       ')}\n`);
    } catch (err) {
      process.stderr.write(`error: saving the report in ${dir}: ${err instanceof Error ? err.message : String(err)}\n`);
      process.exitCode = 1;
    }
  }
  const failed = report.runs.some((r) => r.variants.some((v) => v.error || v.delivery.lost || v.delivery.duplicated || v.delivery.unmatched));
  if (failed) {
    process.stderr.write(`!!! ${warnings(report.runs).length} problem(s): see the warnings above (lost, duplicated or unmatched events, failed runs)\n`);
    process.exitCode = 1;
  }
}

export async function runCommand(o: RunOpts): Promise<void> {
  const scenario = findScenario(o['scenario']);
  const { config, explicit } = resolveConfig(scenario, flagsToConfig(o));
  await execute([{ scenario, config, explicit }], o, true, scenario.name);
}

export async function matrixCommand(o: MatrixOpts): Promise<void> {
  const scenario = findScenario(o['scenario']);
  const flags = flagsToConfig(o);
  const swept = (['messageSize', 'batchSize', 'publishers'] as const).filter((k) => !scenario.takes.includes(k));
  if (swept.length > 0) {
    throw new UsageError(
      `matrix sweeps --message-sizes, --batch-sizes and --publisher-counts, but scenario "${scenario.name}" does not take ${swept.map((k) => FLAG_NAMES[k]).join(', ')} (it takes ${flagsTaken(scenario).join(', ')}); nothing was run.`,
    );
  }
  const plans: Planned[] = [];
  for (const messageSize of o.messageSizes)
    for (const batchSize of o.batchSizes)
      for (const publishers of o.publisherCounts) {
        const flushInterval = flags.flushInterval ?? (batchSize === 1 ? 0 : (scenario.defaults.flushInterval ?? 0));
        plans.push({ scenario, ...resolveConfig(scenario, { ...flags, messageSize, batchSize, publishers, flushInterval }) });
      }
  checkOutputTargets(o); // execute() is given none: the matrix writes its summary after every cell
  const merged: ScenarioResult[] = [];
  const report = await execute(plans, { ...o, json: undefined, markdown: undefined, html: undefined, withBaselines: Boolean(o['withBaselines']) }, true, undefined, (r) => merged.push(r));
  if (merged.length === 0) return;
  const first = merged[0]!;
  const all: ScenarioResult = { ...first, title: `${first.title} (matrix)`, variants: [], wallMs: merged.reduce((a, r) => a + r.wallMs, 0) };
  for (const r of merged) {
    const cell = `batch ${r.config.batchSize}, ${r.config.publishers}P, ${r.config.messageSize} B`;
    const suffix = `@b${r.config.batchSize}-p${r.config.publishers}-s${r.config.messageSize}`;
    for (const v of r.variants) all.variants.push({ ...v, id: v.id + suffix, label: `${cell}: ${v.label}`, baseline: v.baseline ? v.baseline + suffix : undefined });
  }
  const final: BenchReport = { ...report, runs: [all] };
  process.stdout.write('\n(matrix summary)\n');
  const name = `matrix-${scenario.name}`;
  const dir = saveDir(o, name);
  if (dir !== undefined) prepareResultsDir(dir);
  output(final, o, name);
}

/** Scenarios `suite --all` also runs on Redis (they compare with ioredis baselines there). */
const ALSO_ON_REDIS = new Set(['consumer-groups', 'message-size']);

export async function suiteCommand(o: Opts): Promise<void> {
  const flags = flagsToConfig(o);
  const plans = o.all ? await allScenariosPlans(flags, Boolean(o.quick)) : await defaultSuitePlans(flags);
  noteDropped(flags, plans);
  await execute(plans, o, false, o.all ? 'suite-all' : 'suite');
}

/**
 * `suite --all`: every scenario. A --transport is used by the scenarios that have it; the others, and every
 * scenario when none is given, run on the transports seedTransports picks.
 */
async function allScenariosPlans(flags: Partial<BenchConfig>, quick: boolean): Promise<Planned[]> {
  const inProc = flags.transport ? undefined : await inProcessTransport();
  const plans: Planned[] = [];
  for (const scenario of SCENARIOS) {
    const f = { ...flags };
    if (f.transport && !scenario.transports.includes(f.transport)) delete f.transport;
    const ts = f.transport ? [f.transport] : seedTransports(scenario, inProc);
    for (const transport of ts) plans.push({ scenario, ...resolveConfig(scenario, { ...f, transport }, { quick, unused: 'drop' }) });
  }
  return plans;
}

/**
 * The transports a scenario runs on in `suite --all` without --transport: its seed transport, with memory
 * replaced by the in-process transport (native when it loads); scenarios with Redis baselines also on Redis.
 */
function seedTransports(scenario: Scenario, inProc: TransportName | undefined): TransportName[] {
  const seedT = scenario.transports[0]!;
  const ts: TransportName[] = [seedT === 'memory' && inProc && scenario.transports.includes(inProc) ? inProc : seedT];
  if (ALSO_ON_REDIS.has(scenario.name) && !ts.includes('redis')) ts.push('redis');
  return ts;
}

/** The default suite: DEFAULT_SUITE's scenarios with their quick settings, on the in-process transport. */
async function defaultSuitePlans(flags: Partial<BenchConfig>): Promise<Planned[]> {
  const inProc = flags.transport ?? (await inProcessTransport());
  const plans: Planned[] = [];
  for (const name of DEFAULT_SUITE) {
    const scenario = findScenario(name);
    // A transport asked for is used wherever the scenario has it; by default, noop scenarios stay on noop.
    const asked = flags.transport !== undefined && scenario.transports.includes(flags.transport);
    const transport = asked || (scenario.transports.includes(inProc) && scenario.transports[0] !== 'noop') ? inProc : scenario.transports[0]!;
    plans.push({ scenario, ...resolveConfig(scenario, { ...flags, transport }, { quick: true, unused: 'drop' }) });
  }
  return plans;
}

/**
 * A suite applies each flag to the scenarios that take it and runs the others without it (their config
 * does not show it). Says so on stderr, before anything runs; a flag that none of the suite's scenarios
 * takes is a UsageError.
 */
function noteDropped(flags: Partial<BenchConfig>, plans: Planned[]): void {
  const given = (Object.keys(flags) as ConfigKey[]).filter(isScenarioFlag);
  const names = (ps: Planned[]) => [...new Set(ps.map((p) => p.scenario.name))];
  for (const key of given) {
    const without = names(plans.filter((p) => p.dropped?.includes(key)));
    if (without.length === 0) continue;
    const with_ = names(plans.filter((p) => !p.dropped?.includes(key)));
    if (with_.length === 0) {
      const takers = SCENARIOS.filter((sc) => sc.takes.includes(key)).map((sc) => sc.name);
      throw new UsageError(`${FLAG_NAMES[key]} applies to none of this suite's scenarios (it is taken by ${takers.join(', ')}); nothing was run.`);
    }
    const note = `note: ${FLAG_NAMES[key]} applies to ${with_.join(', ')}; ${without.join(', ')} ${without.length > 1 ? 'do' : 'does'} not take it and run${without.length > 1 ? '' : 's'} without it`;
    process.stderr.write(`${wrap(note).join('\n')}\n`);
  }
}

/** For --help: the flags each scenario takes, and what run and suite do with the others. */
export function scenarioFlagsHelp(): string {
  const lines = SCENARIOS.map((sc) => `  ${sc.name.padEnd(22)} ${flagsTaken(sc).join(' ')}`);
  return [
    '',
    'Flags each scenario takes, besides --transport, --iterations, --warmup, --redis-url, --transport-option and the',
    'output and process flags, which every scenario takes. `run` refuses a flag its scenario does not take (exit 2,',
    'nothing run); `suite` applies each flag to the scenarios that take it and runs the others without it (a note on',
    'stderr says which); `matrix` needs a scenario that takes --message-size, --batch-size and --publishers.',
    ...lines,
  ].join('\n');
}

export function listCommand(): void {
  const pad = ' '.repeat(23);
  for (const s of SCENARIOS) {
    const d = Object.entries(s.defaults)
      .map(([k, v]) => `${k}=${v}`)
      .join(' ');
    const refs = scenarioReferences(s.seed).map((r) => r.name);
    const lines = [
      ...wrap(`${s.name.padEnd(22)} compared with ${refs.join(', ') || 'baselines only'}; transports ${s.transports.join('/')}`, WIDTH, pad),
      ...[s.description, `defaults: ${d}`, `takes: ${flagsTaken(s).join(' ')}`].flatMap((t) => wrap(`${pad}${t}`, WIDTH, pad)),
    ];
    process.stdout.write(`${lines.join('\n')}\n`);
  }
}

/** Re-renders a saved `--json` report as terminal text, Markdown and/or HTML. */
export async function reportCommand(o: ReportOpts): Promise<void> {
  let report: BenchReport;
  try {
    report = JSON.parse(readFileSync(o['from'], 'utf8')) as BenchReport;
  } catch (err) {
    throw new UsageError(`Cannot read report ${o['from']}: ${err instanceof Error ? err.message : String(err)}`);
  }
  if (report.schema !== SCHEMA) throw new UsageError(`${o['from']} is not an ${SCHEMA} report.`);
  if (o['markdown']) checkMarkdownTarget(o['markdown']);
  output(report, o);
}
