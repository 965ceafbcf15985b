/**
 * The command-line flags shared by `run`, `matrix` and `suite`, each documented for --help.
 */
import { Command, Option } from 'commander';
import { intArg, MIN_MESSAGE_SIZE, messageSizeArg, nodeOptionArg, numArg, transportArg, transportOptionArg, urlArg } from './config.js';
import { DEFAULT_RESULTS_DIR, RESULTS_DIR_ENV } from './save.js';
import type { BenchConfig } from './types.js';

export function addConfigFlags(cmd: Command, opts: { sweeps?: boolean } = {}): Command {
  cmd
    .addOption(new Option('-t, --transport <name>', "transport: redis | native | memory | noop (default: the scenario's first transport, see `list`)").argParser(transportArg))
    .addOption(new Option('--message-count <n>', 'events per iteration (default: the scenario configuration, see `list`)').argParser(intArg('message-count', 1, 1e9)))
    .addOption(
      new Option('--message-size <bytes>', `JSON-encoded payload size in bytes, at least ${MIN_MESSAGE_SIZE} (the JSON {"id":N,"body":""} with a 10-digit id)`).argParser(
        messageSizeArg('message-size'),
      ),
    )
    .addOption(new Option('--batch-size <n>', 'batcher maxEvents per batch; 1 turns batching off').argParser(intArg('batch-size', 1, 1_000_000)))
    .addOption(new Option('--flush-interval <ms>', 'batcher maxWaitMs: linger to fill a batch; 0 = adaptive').argParser(numArg('flush-interval', 0, 60_000)))
    .addOption(new Option('--publishers <n>', 'concurrent publishers (async loops)').argParser(intArg('publishers', 1, 1_000_000)))
    .addOption(new Option('--consumers <n>', 'consumers in the group').argParser(intArg('consumers', 1, 1024)))
    .addOption(new Option('--partitions <n>', 'partitions per event type').argParser(intArg('partitions', 1, 4096)))
    .addOption(new Option('--rate <events/s>', 'open-loop send rate (latency-sustained, end-to-end); 0 = closed loop (as fast as possible)').argParser(numArg('rate', 0, 1e9)))
    .addOption(new Option('--duration <s>', 'seconds per iteration (extreme-batching, which is bound by time, not by --message-count)').argParser(numArg('duration', 0.1, 3600)))
    .addOption(new Option('--iterations <n>', 'measured iterations, each in a fresh process').argParser(intArg('iterations', 1, 1000)))
    .addOption(new Option('--warmup <n>', 'discarded warmup iterations run before each measured one, in its process').argParser(intArg('warmup', 0, 100)))
    .addOption(new Option('--redis-url <url>', 'Redis for the redis transport and ioredis baselines (default: redis://127.0.0.1:6379)').argParser(urlArg))
    .addOption(new Option('--transport-option <key=value>', 'extra transport option, repeatable (value parsed as JSON when possible)').argParser(transportOptionArg))
    .addOption(
      new Option(
        '--node-option <flag>',
        'node flag for every benchmark child process, library rows and baselines alike, repeatable (e.g. --node-option=--max-semi-space-size=64); recorded in the report',
      ).argParser(nodeOptionArg),
    )
    .option('--json <file>', 'write the full report as JSON (schema: docs/benchmarks.md)')
    .option('--markdown <file>', 'write a Markdown report (replaces the marked results section if the file has one)')
    .option('--html <file>', 'write a self-contained HTML report with charts')
    .option('--no-save', `do not save the report (by default its JSON and HTML go to ${DEFAULT_RESULTS_DIR}/<time>-<suite or scenario>.json and .html)`)
    .addOption(new Option('--results-dir <dir>', 'where reports are saved').default(DEFAULT_RESULTS_DIR).env(RESULTS_DIR_ENV))
    .addOption(
      new Option(
        '--iteration-timeout <s>',
        'seconds each iteration may take (a child runs its warmups and one measured iteration: it is killed after this x (warmups + 1); --no-fork: abandoned) before it is reported as failed',
      )
        .default(300)
        .argParser(numArg('iteration-timeout', 0.1, 86_400)),
    )
    .option('--no-fork', 'run iterations in this process instead of a fresh child process each (debugging; a timed-out iteration is abandoned, not killed)')
    .option('--no-peers', 'leave out the peer rows (BullMQ, @moleculer/channels) of publishing-throughput, consumer-groups and end-to-end on Redis')
    .option('--keep-keys', "leave the run's Redis keys in place (for inspection); default: each iteration's keys are deleted once it ends")
    .option('--quiet', 'no progress output');
  void opts;
  return cmd;
}

/** Picks the config fields out of commander's options. */
export function flagsToConfig(o: Record<string, unknown>): Partial<BenchConfig> {
  const c: Partial<BenchConfig> = {};
  const map: [string, keyof BenchConfig][] = [
    ['transport', 'transport'],
    ['messageCount', 'messageCount'],
    ['messageSize', 'messageSize'],
    ['batchSize', 'batchSize'],
    ['flushInterval', 'flushInterval'],
    ['publishers', 'publishers'],
    ['consumers', 'consumers'],
    ['partitions', 'partitions'],
    ['rate', 'rate'],
    ['duration', 'duration'],
    ['iterations', 'iterations'],
    ['warmup', 'warmup'],
    ['redisUrl', 'redisUrl'],
    ['transportOption', 'transportOptions'],
  ];
  for (const [from, to] of map) if (o[from] !== undefined) (c as Record<string, unknown>)[to] = o[from];
  return c;
}
