#!/usr/bin/env node
/** The `eventlane-redis` executable (package.json `bin`); the commands are in ops-cli.ts. */
import { runOpsCli } from './ops-cli.js';

// Output piped into a command that stops reading (`| head`): end quietly, as other tools do, not with an
// unhandled EPIPE stack trace.
process.stdout.on('error', (err: NodeJS.ErrnoException) => {
  if (err.code === 'EPIPE') process.exit(0);
  throw err;
});

runOpsCli(process.argv.slice(2), {
  out: (text) => process.stdout.write(`${text}\n`),
  err: (text) => process.stderr.write(`${text}\n`),
  env: process.env,
}).then((code) => {
  process.exitCode = code;
});
