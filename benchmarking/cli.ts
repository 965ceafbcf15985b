/**
 * eventlane benchmark CLI: `npm run benchmark -- <run|matrix|suite|list> [flags]`.
 * With no command it runs the short default suite on the in-process transport.
 */
import { Command, CommanderError, Option } from 'commander';
import { runCommand, matrixCommand, suiteCommand, listCommand, reportCommand, scenarioFlagsHelp } from './lib/commands.js';
import { addConfigFlags } from './lib/flags.js';
import { intListArg, messageSizeListArg, UsageError } from './lib/config.js';
import { abandonedIterations, endChildrenOnSignals } from './lib/runner.js';

const program = new Command('benchmark')
  .description('Measures eventlane against hand-written baselines and the reference figures of the systems it replaces (benchmarking/references.ts). See docs/benchmarks.md.')
  .showHelpAfterError('(run with --help for usage)')
  .exitOverride();

addConfigFlags(program.command('run').description('run one scenario (each measured iteration in a fresh process)').requiredOption('-s, --scenario <name>', 'scenario name (see `list`)'))
  .addHelpText('after', scenarioFlagsHelp)
  .action((o) => runCommand(o));

addConfigFlags(
  program
    .command('matrix')
    .description('sweep batch size x publisher count x message size in one invocation (the tables of the TypeScript Redis Streams library)')
    .option('-s, --scenario <name>', 'scenario to sweep', 'publishing-throughput')
    .addOption(new Option('--batch-sizes <list>', 'comma-separated batch sizes').default([1, 3000, 4000, 5000], '1,3000,4000,5000').argParser(intListArg('batch-sizes', 1, 1_000_000)))
    .addOption(new Option('--publisher-counts <list>', 'comma-separated publisher counts').default([1, 5], '1,5').argParser(intListArg('publisher-counts', 1, 1_000_000)))
    .addOption(new Option('--message-sizes <list>', 'comma-separated message sizes (bytes)').default([128, 4096], '128,4096').argParser(messageSizeListArg('message-sizes')))
    .option('--with-baselines', "also run the scenario's baselines for each cell"),
)
  .addHelpText('after', scenarioFlagsHelp)
  .action((o) => matrixCommand(o));

addConfigFlags(
  program
    .command('suite', { isDefault: true })
    .description('default: a short suite on the in-process transport (native if available, else memory), no Redis; --all: every scenario')
    .option(
      '--all',
      'every scenario on its first transport with its full configuration (memory -> native when it loads; consumer-groups and message-size also on redis; unavailable transports are reported as skipped)',
    )
    .option('--quick', 'with --all: the short settings of the default suite'),
)
  .addHelpText('after', scenarioFlagsHelp)
  .action((o) => suiteCommand(o));

program
  .command('report')
  .description('re-render a saved --json report as a table, --markdown and/or --html')
  .requiredOption('--from <file>', 'the JSON report to read')
  .option('--json <file>', 'write a copy of the JSON report')
  .option('--markdown <file>', 'write Markdown (replaces the marked results section if the file has one)')
  .option('--html <file>', 'write the self-contained HTML report')
  .action((o) => reportCommand(o));

program
  .command('list')
  .description('list the scenarios, the reference systems they compare with and their default configurations')
  .action(() => listCommand());

async function main(): Promise<void> {
  endChildrenOnSignals();
  try {
    await program.parseAsync(process.argv);
  } catch (err) {
    if (err instanceof CommanderError) {
      process.exitCode = err.exitCode === 0 ? 0 : 2;
      return;
    }
    const msg = err instanceof Error ? err.message.split('\n')[0] : String(err);
    process.stderr.write(`error: ${msg}\n`);
    if (process.env['BENCH_DEBUG'] && err instanceof Error) process.stderr.write(`${err.stack}\n`);
    process.exitCode = err instanceof UsageError ? 2 : 1;
  }
}

await main();
// An iteration abandoned after --iteration-timeout with --no-fork may still hold timers and connections
// that would keep this process alive; everything is reported (written synchronously) by now.
if (abandonedIterations() > 0) process.exit();
