/**
 * The worker-process runner. For each measured iteration of each variant the parent forks a fresh
 * `node --expose-gc child.js` (the compiled benchmark, `npm run benchmark`; `--import tsx child.ts` when
 * the CLI itself runs from source), which runs the warmup iterations (JIT,
 * connections) and then the measured one, and returns figures over IPC. No heap, JIT or transport state
 * leaks from one measured iteration into the next. `fork: false` runs everything in this process, under
 * the same time limit (`runHere`).
 */
import { fork, type ChildProcess } from 'node:child_process';
import inspector from 'node:inspector';
import { fileURLToPath } from 'node:url';
import { firstLine, runIterationsHere, type IterationRequest } from './iterate.js';
import { Watchdog } from './watchdog.js';
import { deletePrefix } from './redis.js';
import { linkBaselines, summarize } from './stats.js';
import type { BenchConfig, ConfigKey, IterationResult, Scenario, ScenarioResult, VariantKind, VariantResult } from './types.js';
import { scenarioTitle } from './types.js';

const FROM_SOURCE = import.meta.url.endsWith('.ts');
const CHILD = fileURLToPath(new URL(FROM_SOURCE ? './child.ts' : './child.js', import.meta.url));
const CHILD_ARGS = FROM_SOURCE ? ['--import', 'tsx', '--expose-gc'] : ['--enable-source-maps', '--expose-gc'];

export interface RunOptions {
  fork: boolean;
  /** Keep the run's Redis keys (tests inspect them). */
  keepKeys?: boolean;
  /** Only variants whose kind matches (matrix runs the library only unless asked; `--no-peers` leaves out peers). */
  kinds?: ReadonlyArray<VariantKind>;
  /**
   * Wall time one iteration (warmup or measured) may take before it is reported as failed; a request of
   * w warmups and one measured iteration gets (w + 1) x this. In a child process the child is killed; with
   * `fork: false` the iterations are abandoned (see `runHere`).
   * @default DEFAULT_ITERATION_TIMEOUT_MS
   */
  iterationTimeoutMs?: number;
  /** Extra flags for the node of each child process (`--node-option`); not with `fork: false`. */
  nodeOptions?: readonly string[];
  onStart?(total: number): void;
  onStep?(label: string): void;
}

/** Default wall-time limit of one iteration in a child process (5 minutes). */
export const DEFAULT_ITERATION_TIMEOUT_MS = 300_000;

/**
 * The line of a crashed child's stderr that says why: the last error line (`Error: ...`, `TypeError
 * [ERR_X]: ...`, `FATAL ERROR: ...`), else the last line that is not a stack frame or Node's closing
 * `Node.js vXX` banner (which is the last line of every uncaught-exception report).
 */
export function crashReason(stderr: string): string | undefined {
  const lines = stderr
    .split('\n')
    .map((l) => l.trimEnd())
    .filter((l) => l.trim() !== '' && !/^Node\.js v\d/.test(l) && !/^\s+at /.test(l) && !/^\s*\d+: 0x[0-9a-f]+/.test(l));
  const error = lines.filter((l) => /^(Uncaught )?[\w.]*(Error|Exception)\b.*:|^FATAL ERROR:/.test(l.trim())).pop();
  return (error ?? lines.pop())?.trim();
}

/** The wall-time limit of a request: `timeoutMs` per iteration, warmups included. */
function limitFor(req: IterationRequest, timeoutMs: number): number {
  // Capped at setTimeout's limit (2^31 - 1 ms): a longer delay fires at once.
  return Math.min(2 ** 31 - 1, timeoutMs * Math.max(1, req.warmups + req.measured));
}

/** The start of a timed-out request's error line, the same for a child and for `runHere`. */
function timedOut(req: IterationRequest, limitMs: number): string {
  return `iteration timed out after ${Math.round(limitMs / 100) / 10} s (${req.warmups} warmup + ${req.measured} measured)`;
}

/** Children running an iteration now: ended with the CLI when it is interrupted (`endChildrenOnSignals`). */
const live = new Set<ChildProcess>();

/** Key prefixes of the Redis runs going on now (prefix -> Redis URL), deleted when the CLI is interrupted. */
const runPrefixes = new Map<string, string>();

/** How long an interrupted CLI may spend deleting its run's Redis keys before it exits without. */
export const INTERRUPT_CLEANUP_MS = 3_000;

let interrupted = false;

/**
 * On SIGINT/SIGTERM the CLI kills its running child (it would otherwise exit when its IPC channel closes,
 * see child.ts, but not before its current await returns), deletes the keys of the Redis run going on (its
 * own prefix only, unless --keep-keys), and exits with 128 + the signal number. The deletion waits for the
 * killed child to be gone, then gets INTERRUPT_CLEANUP_MS in all: past that (Redis unreachable, a huge run)
 * the CLI says which prefix it left and exits. A second signal meanwhile exits at once.
 */
export function endChildrenOnSignals(): void {
  for (const [signal, n] of [
    ['SIGINT', 2],
    ['SIGTERM', 15],
  ] as const) {
    process.once(signal, () => {
      if (interrupted) process.exit(128 + n);
      interrupted = true;
      const children = [...live];
      for (const child of children) child.kill('SIGKILL');
      void deleteRunKeys(children, [...runPrefixes]).finally(() => process.exit(128 + n));
    });
  }
}

async function deleteRunKeys(children: ChildProcess[], prefixes: [prefix: string, url: string][]): Promise<void> {
  if (prefixes.length === 0) return;
  let timer: NodeJS.Timeout | undefined;
  const expired = new Promise<'expired'>((resolve) => {
    timer = setTimeout(() => resolve('expired'), INTERRUPT_CLEANUP_MS);
  });
  // What a killed child had sent may still reach Redis: delete once it is gone, and once more after that.
  const gone = Promise.all(children.map((c) => (c.exitCode !== null || c.signalCode !== null ? undefined : new Promise((r) => c.once('exit', r)))));
  const work = (async () => {
    await gone;
    const deleted = new Map<string, number>();
    for (let pass = 0; pass < 2; pass++) {
      for (const [prefix, url] of prefixes) deleted.set(prefix, (deleted.get(prefix) ?? 0) + (await deletePrefix(url, prefix)));
    }
    return deleted;
  })();
  work.catch(() => undefined); // past the bound the CLI exits without it
  const where = (url: string) => url.replace(/\/\/[^@/]*@/, '//'); // no credentials on stderr
  try {
    const r = await Promise.race([work, expired]);
    for (const [prefix, url] of prefixes) {
      if (r === 'expired') process.stderr.write(`interrupted: the run's Redis keys were not deleted within ${INTERRUPT_CLEANUP_MS / 1000} s; they are left under ${prefix} at ${where(url)}\n`);
      else process.stderr.write(`interrupted: deleted the run's ${r.get(prefix) ?? 0} Redis key(s) under ${prefix}\n`);
    }
  } catch (err) {
    for (const [prefix, url] of prefixes) process.stderr.write(`interrupted: could not delete the run's Redis keys (${firstLine(err)}); they are left under ${prefix} at ${where(url)}\n`);
  } finally {
    clearTimeout(timer);
  }
}

/**
 * Runs `req` in a fresh child process (`script`: the child entry, tests substitute their own). Rejects
 * with a one-line reason when the child reports an error, exits without replying (crash: the exit code
 * or signal and `crashReason`), or is still running after `timeoutMs` x (warmups + measured), in which
 * case it is killed (SIGKILL): a hung iteration must not hang the run.
 */
export function runInChild(req: IterationRequest, timeoutMs = DEFAULT_ITERATION_TIMEOUT_MS, script = CHILD, nodeOptions: readonly string[] = []): Promise<IterationResult[]> {
  // Interrupted: the CLI is deleting its keys and about to exit; the run goes no further (the iteration that
  // failed when its child was killed is not followed by another, nor reported).
  if (interrupted) return new Promise(() => {});
  return new Promise((resolve, reject) => {
    const child = fork(script, [], {
      execArgv: [...CHILD_ARGS, ...nodeOptions],
      stdio: ['ignore', 'ignore', 'pipe', 'ipc'],
    });
    live.add(child);
    child.once('exit', () => live.delete(child));
    let stderr = '';
    let settled = false;
    const limitMs = limitFor(req, timeoutMs);
    const timer = setTimeout(() => {
      if (settled) return;
      settled = true;
      child.kill('SIGKILL');
      reject(new Error(`${timedOut(req, limitMs)}; benchmark child ${child.pid} killed`));
    }, limitMs);
    const settle = () => {
      settled = true;
      clearTimeout(timer);
    };
    child.stderr!.on('data', (d: Buffer) => {
      stderr += d.toString();
      if (stderr.length > 20_000) stderr = stderr.slice(-10_000);
    });
    child.once('message', (msg: { ok: boolean; results?: IterationResult[]; error?: string }) => {
      if (settled) return;
      settle();
      if (msg.ok) resolve(msg.results!);
      else reject(new Error(msg.error));
    });
    child.on('error', (err) => {
      // Sending the request to a child that already died (a bad --node-option, a crash at start) fails with
      // EPIPE: its 'close' follows and says why, from its stderr.
      const code = (err as NodeJS.ErrnoException).code;
      if (code === 'EPIPE' || code === 'ERR_IPC_CHANNEL_CLOSED') return;
      if (!settled) reject(err);
      settle();
    });
    // 'close', not 'exit': stderr is complete only once its pipe has closed.
    child.once('close', (code, signal) => {
      if (settled) return;
      settle();
      const why = crashReason(stderr);
      reject(new Error(`benchmark child exited (${signal ?? code})${why ? `: ${why}` : ''}`));
    });
    child.send(req);
  });
}

/** Iterations `runHere` gave up on (they may still be running in this process). */
let abandoned = 0;

/** How many in-process iterations timed out and were abandoned; the CLI exits explicitly when any were. */
export function abandonedIterations(): number {
  return abandoned;
}

/**
 * How long past its limit an in-process request may keep this process from reporting it (a main thread
 * that never yields: a synchronous loop, or an unbroken chain of promise callbacks) before the watchdog
 * kills the process.
 */
export const WATCHDOG_GRACE_MS = 5_000;

let watchdog: Watchdog | undefined;

/**
 * Runs `req` in this process (`--no-fork`) under the same limit as `runInChild`, and rejects with the same
 * error line when it is exceeded. An iteration cannot be killed in-process: it is abandoned and may run
 * on (later results of this process get a note saying so). A main thread that does not yield at all past
 * the limit cannot even report: `WATCHDOG_GRACE_MS` later a watchdog process prints the error line to
 * stderr and kills this process (not when an inspector is open: a thread paused in a debugger is not hung).
 */
export function runHere(
  scenario: Scenario,
  req: IterationRequest,
  timeoutMs = DEFAULT_ITERATION_TIMEOUT_MS,
  run: (s: Scenario, r: IterationRequest) => Promise<IterationResult[]> = runIterationsHere,
): Promise<IterationResult[]> {
  const limitMs = limitFor(req, timeoutMs);
  const what = timedOut(req, limitMs);
  // Not under an inspector: a main thread paused at a breakpoint is not hung.
  if (inspector.url() === undefined) watchdog ??= new Watchdog();
  watchdog?.arm(
    Math.min(2 ** 31 - 1, limitMs + WATCHDOG_GRACE_MS),
    `${what}; the CLI's own process (--no-fork) did not yield for ${WATCHDOG_GRACE_MS / 1000} s more and was killed (no report written)`,
  );
  return new Promise((resolve, reject) => {
    let settled = false;
    const finish = () => {
      settled = true;
      clearTimeout(timer);
      watchdog?.disarm();
    };
    const timer = setTimeout(() => {
      if (settled) return;
      finish();
      abandoned++;
      reject(new Error(`${what}; abandoned in the CLI's own process (--no-fork: it cannot be killed and may run on)`));
    }, limitMs);
    run(scenario, req).then(
      (r) => {
        if (settled) return;
        finish();
        resolve(r);
      },
      (err: unknown) => {
        if (settled) return;
        finish();
        reject(err);
      },
    );
  });
}

const ABANDONED_NOTE = 'measured while an abandoned, timed-out iteration may still have been running in this process (--no-fork)';

async function runHereNoted(scenario: Scenario, req: IterationRequest, timeoutMs: number | undefined): Promise<IterationResult[]> {
  const results = await runHere(scenario, req, timeoutMs);
  if (abandoned === 0) return results;
  return results.map((r) => ({ ...r, notes: [...(r.notes ?? []), ABANDONED_NOTE] }));
}

export async function runScenario(scenario: Scenario, config: BenchConfig, explicit: ReadonlySet<ConfigKey>, opts: RunOptions): Promise<ScenarioResult> {
  const started = Date.now();
  const runConfig: BenchConfig = { ...config, keyPrefix: `eventlane-bench:${process.pid}-${started.toString(36)}:` };
  const variants = scenario.variants(runConfig, explicit).filter((v) => !opts.kinds || opts.kinds.includes(v.kind));
  opts.onStart?.(variants.reduce((a, v) => a + Math.max(1, v.config.iterations), 0));
  const results: VariantResult[] = [];
  // Rounds: iteration i of every variant before iteration i + 1 of any, so a library row and its baseline
  // alternate and a machine that drifts over minutes (this VM does) biases neither side of a ratio.
  const all: IterationResult[][] = variants.map(() => []);
  const errors: (string | undefined)[] = variants.map(() => undefined);
  const rounds = Math.max(...variants.map((v) => Math.max(1, v.config.iterations)), 0);
  const cleanup = config.transport === 'redis' && !opts.keepKeys;
  if (cleanup) runPrefixes.set(runConfig.keyPrefix, config.redisUrl);
  try {
    for (let i = 0; i < rounds; i++) {
      for (let k = 0; k < variants.length; k++) {
        const variant = variants[k]!;
        if (errors[k] !== undefined || i >= Math.max(1, variant.config.iterations)) continue;
        const req: IterationRequest = {
          scenario: scenario.name,
          variant: { ...variant, config: { ...variant.config, keyPrefix: `${runConfig.keyPrefix}${variant.id}:${i}:` } },
          warmups: variant.config.warmup,
          measured: variant.config.iterations === 0 ? 0 : 1,
          keepKeys: opts.keepKeys,
        };
        try {
          all[k]!.push(...(opts.fork ? await runInChild(req, opts.iterationTimeoutMs, CHILD, opts.nodeOptions) : await runHereNoted(scenario, req, opts.iterationTimeoutMs)));
        } catch (err) {
          errors[k] = firstLine(err);
        }
        opts.onStep?.(`${scenario.name} / ${variant.label}`);
      }
    }
    variants.forEach((v, k) => results.push(summarize(v, all[k]!, errors[k])));
  } finally {
    // Each iteration deletes its own keys; this catches those of an iteration that failed or was killed.
    if (cleanup) {
      await deletePrefix(config.redisUrl, runConfig.keyPrefix).catch(() => 0);
      runPrefixes.delete(runConfig.keyPrefix);
    }
  }
  linkBaselines(results);
  return {
    scenario: scenario.name,
    title: scenarioTitle(scenario, runConfig),
    seed: scenario.seed,
    ...(scenario.headline ? { headline: scenario.headline } : {}),
    transport: config.transport,
    config: runConfig,
    variants: results,
    startedAt: new Date(started).toISOString(),
    wallMs: Date.now() - started,
    forked: opts.fork,
  };
}
