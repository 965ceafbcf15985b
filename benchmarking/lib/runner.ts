/**
 * The worker-process runner. For each measured iteration of each variant the parent forks a fresh
 * `node --expose-gc child.js` (the compiled benchmark, `npm run benchmark`; `--import tsx child.ts` when
 * the CLI itself runs from source), which runs the warmup iterations (JIT,
 * connections) and then the measured one, and returns figures over IPC. No heap, JIT or transport state
 * leaks from one measured iteration into the next. `fork: false` runs everything in this process.
 */
import { fork } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { firstLine, runIterationsHere, type IterationRequest } from './iterate.js';
import { cleanupPrefix } from './redis.js';
import { linkBaselines, summarize } from './stats.js';
import type { BenchConfig, ConfigKey, IterationResult, Scenario, ScenarioResult, VariantResult } from './types.js';

const FROM_SOURCE = import.meta.url.endsWith('.ts');
const CHILD = fileURLToPath(new URL(FROM_SOURCE ? './child.ts' : './child.js', import.meta.url));
const CHILD_ARGS = FROM_SOURCE ? ['--import', 'tsx', '--expose-gc'] : ['--enable-source-maps', '--expose-gc'];

export interface RunOptions {
  fork: boolean;
  /** Keep the run's Redis keys (tests inspect them). */
  keepKeys?: boolean;
  /** Only variants whose kind matches (matrix runs the library only unless asked). */
  kinds?: ReadonlyArray<'eventlane' | 'baseline'>;
  /**
   * Wall time one iteration (warmup or measured) may take in a child process before the child is killed
   * and the iteration reported as failed; a child running w warmups and one measured iteration gets
   * (w + 1) x this. Not applied with `fork: false` (a hung iteration cannot be stopped in-process).
   * @default DEFAULT_ITERATION_TIMEOUT_MS
   */
  iterationTimeoutMs?: number;
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

/**
 * Runs `req` in a fresh child process (`script`: the child entry, tests substitute their own). Rejects
 * with a one-line reason when the child reports an error, exits without replying (crash: the exit code
 * or signal and `crashReason`), or is still running after `timeoutMs` x (warmups + measured), in which
 * case it is killed (SIGKILL): a hung iteration must not hang the run.
 */
export function runInChild(req: IterationRequest, timeoutMs = DEFAULT_ITERATION_TIMEOUT_MS, script = CHILD): Promise<IterationResult[]> {
  return new Promise((resolve, reject) => {
    const child = fork(script, [], {
      execArgv: CHILD_ARGS,
      stdio: ['ignore', 'ignore', 'pipe', 'ipc'],
    });
    let stderr = '';
    let settled = false;
    // Capped at setTimeout's limit (2^31 - 1 ms): a longer delay fires at once and would kill the child.
    const limitMs = Math.min(2 ** 31 - 1, timeoutMs * Math.max(1, req.warmups + req.measured));
    const timer = setTimeout(() => {
      if (settled) return;
      settled = true;
      child.kill('SIGKILL');
      reject(new Error(`iteration timed out after ${Math.round(limitMs / 100) / 10} s (${req.warmups} warmup + ${req.measured} measured); benchmark child ${child.pid} killed`));
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
    child.once('error', (err) => {
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

export async function runScenario(
  scenario: Scenario,
  config: BenchConfig,
  explicit: ReadonlySet<ConfigKey>,
  opts: RunOptions,
): Promise<ScenarioResult> {
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
        };
        try {
          all[k]!.push(...(opts.fork ? await runInChild(req, opts.iterationTimeoutMs) : await runIterationsHere(scenario, req)));
        } catch (err) {
          errors[k] = firstLine(err);
        }
        opts.onStep?.(`${scenario.name} / ${variant.label}`);
      }
    }
    variants.forEach((v, k) => results.push(summarize(v, all[k]!, errors[k])));
  } finally {
    if (config.transport === 'redis' && !opts.keepKeys) await cleanupPrefix(config.redisUrl, runConfig.keyPrefix).catch(() => 0);
  }
  linkBaselines(results);
  return {
    scenario: scenario.name,
    title: scenario.title,
    seed: scenario.seed,
    transport: config.transport,
    config: runConfig,
    variants: results,
    startedAt: new Date(started).toISOString(),
    wallMs: Date.now() - started,
  };
}
