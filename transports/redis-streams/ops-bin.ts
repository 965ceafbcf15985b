#!/usr/bin/env node
/** The `eventlane-redis` executable (package.json `bin`); the commands are in ops-cli.ts. */
import { runOpsCli } from './ops-cli.js';

runOpsCli(process.argv.slice(2), {
  out: (text) => process.stdout.write(`${text}\n`),
  err: (text) => process.stderr.write(`${text}\n`),
  env: process.env,
}).then((code) => {
  process.exitCode = code;
});
