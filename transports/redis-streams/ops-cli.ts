/**
 * `eventlane-redis`: the operations API (admin.ts) from a terminal. Lists streams, groups (pending, lag,
 * retrying) and pending entries; inspects, replays and purges dead letters. Reads the same key layout as
 * the transport (docs/wire-format.md); a type's partitions are the `--partitions` flag, else its recorded count,
 * else found by SCAN. Shows and raises a type's recorded partition count.
 */
import { parseArgs } from 'node:util';
import { stringifyAnyDepth } from '../../src/deep-json.js';
import { ConfigError, EventlaneError } from '../../src/errors.js';
import type { RedisDeadLetter, RedisStreamsAdmin, ReplaySkipReason } from './admin.js';
import { openRedisStreamsAdmin } from './transport.js';

export const USAGE = `Usage: eventlane-redis <command> [options]

Commands:
  streams                  partition streams under the prefix, with their lengths
  groups <type>            consumer groups of an event type: consumers; pending, lag and trimmed
                           stream entries; retrying entries (one event each); lag and pending
                           events (~: estimated from a sample of entries)
  pending <type> <group>   entries delivered to the group and not acked, per consumer
  dlq <type>               dead letters, oldest first (--group, --limit)
  replay <type>            dead letters back to their group's retry stream (--group, --id)
  purge <type>             delete dead letters (--group, --id, or --all for every one of the type)
  partitions <type> [<n>]  the type's recorded partition count; with <n>, raise it to n (never
                           lowered; running buses follow within transport.partitionsCheckMs)

Options:
  --url <url>              Redis URL (default: $REDIS_URL, else redis://127.0.0.1:6379)
  --cluster <host:port,..> Redis Cluster seed nodes instead of --url; a seed given as
                           redis://[user:pass@]host:port (rediss:// for TLS) sets them for every node
  --prefix <prefix>        key prefix of the transport (default: el)
  --partitions <n>         partitions of the type (default: its recorded count, else counted
                           from its streams)
  --group <group>          only this consumer group's dead letters
  --id <id>                dead letters by ref (partition/dlqId, as dlq lists them) or event id (repeatable)
  --limit <n>              most dead letters listed (default: 100)
  --all                    purge: every dead letter of the type
                           (a flag the command does not read is bad usage)
  --timeout-ms <ms>        connect and command timeout (default: 5000)
  --json                   print JSON instead of text
  -h, --help               this text

Exit codes: 0 done, 1 Redis or runtime error, 2 bad usage.`;

/** Where the CLI writes; the bin passes the process streams, tests collect strings. */
export interface CliIo {
  out(text: string): void;
  err(text: string): void;
  env: Record<string, string | undefined>;
}

const OPTIONS = {
  url: { type: 'string' },
  cluster: { type: 'string' },
  prefix: { type: 'string' },
  partitions: { type: 'string' },
  group: { type: 'string' },
  id: { type: 'string', multiple: true },
  limit: { type: 'string' },
  all: { type: 'boolean' },
  'timeout-ms': { type: 'string' },
  json: { type: 'boolean' },
  help: { type: 'boolean', short: 'h' },
} as const;

type Flags = ReturnType<typeof parse>['values'];

/** The flags each command reads besides the connection ones: any other is bad usage, not silently ignored. */
const COMMAND_FLAGS: Record<string, readonly (keyof typeof OPTIONS)[]> = {
  streams: [],
  groups: ['partitions'],
  pending: ['partitions'],
  dlq: ['partitions', 'group', 'limit'],
  replay: ['partitions', 'group', 'id'],
  purge: ['partitions', 'group', 'id', 'all'],
  partitions: [],
};
const CONNECTION_FLAGS: readonly string[] = ['url', 'cluster', 'prefix', 'timeout-ms', 'json', 'help'];

function checkFlags(command: string, flags: Flags): void {
  const own = COMMAND_FLAGS[command];
  if (own === undefined) return; // an unknown command is reported as such
  const stray = Object.keys(flags).filter((f) => (flags as Record<string, unknown>)[f] !== undefined && !CONNECTION_FLAGS.includes(f) && !own.includes(f as keyof typeof OPTIONS));
  if (stray.length === 0) return;
  const takes = own.length ? `it takes ${own.map((f) => `--${f}`).join(', ')}` : 'it takes only the connection options';
  throw new ConfigError(`${stray.map((f) => `--${f}`).join(', ')} ${stray.length === 1 ? 'does' : 'do'} not apply to "${command}" (${takes}).`);
}

function parse(argv: string[]) {
  return parseArgs({ args: argv, options: OPTIONS, allowPositionals: true, strict: true });
}

function intFlag(value: string | undefined, name: string, min: number, max: number): number | undefined {
  if (value === undefined) return undefined;
  const n = Number(value);
  if (!Number.isInteger(n) || n < min || n > max) throw new ConfigError(`--${name} must be an integer from ${min} to ${max.toLocaleString('en-US')}, got "${value}".`);
  return n;
}

/** The transport block for openRedisStreamsAdmin from the connection flags. */
function transportConfig(flags: Flags, env: CliIo['env']): Record<string, unknown> {
  const timeout = intFlag(flags['timeout-ms'], 'timeout-ms', 1, 600_000) ?? 5_000;
  const config: Record<string, unknown> = { commandTimeoutMs: timeout };
  if (flags.cluster !== undefined) {
    if (flags.url !== undefined) throw new ConfigError('Give --url or --cluster, not both.');
    // Seed URLs' credentials and TLS apply to every node (the transport's config lifts them).
    config['cluster'] = {
      nodes: flags.cluster
        .split(',')
        .map((s) => s.trim())
        .filter(Boolean),
    };
  } else {
    config['url'] = flags.url ?? env['REDIS_URL'] ?? 'redis://127.0.0.1:6379';
  }
  if (flags.prefix !== undefined) config['prefix'] = flags.prefix;
  return config;
}

async function withAdmin<T>(flags: Flags, env: CliIo['env'], fn: (admin: RedisStreamsAdmin) => Promise<T>): Promise<T> {
  const { admin, close } = await openRedisStreamsAdmin(transportConfig(flags, env));
  try {
    return await fn(admin);
  } finally {
    await close();
  }
}

/** Runs `fn` on an admin that knows the type's partition count (the flag, the recorded count, or the highest partition stream + 1). */
function withTypeAdmin<T>(flags: Flags, env: CliIo['env'], type: string, fn: (admin: RedisStreamsAdmin) => Promise<T>): Promise<T> {
  const given = intFlag(flags.partitions, 'partitions', 1, 4096);
  return withAdmin(flags, env, async (admin) => {
    const n = given ?? (await admin.recordedPartitions(type)) ?? Math.max(1, ...(await admin.listStreams()).filter((s) => s.type === type).map((s) => s.partition + 1));
    return fn(admin.withPartitions(type, n));
  });
}

/** `rows` as a text table of `columns`, headed by `labels` (default: the column names). */
function table(rows: Record<string, unknown>[], columns: string[], labels: string[] = columns): string {
  if (rows.length === 0) return '(none)';
  const cells = [labels, ...rows.map((r) => columns.map((c) => (r[c] === undefined ? '-' : String(r[c]))))];
  const widths = columns.map((_, i) => Math.max(...cells.map((row) => row[i]!.length)));
  return cells
    .map((row) =>
      row
        .map((cell, i) => cell.padEnd(widths[i]!))
        .join('  ')
        .trimEnd(),
    )
    .join('\n');
}

function letterRow(d: RedisDeadLetter): Record<string, unknown> {
  return {
    ref: d.ref,
    group: d.group,
    partition: d.partition,
    eventId: d.id,
    attempts: d.attempts,
    // A letter written by someone else may have no time, or not a number: '-' (toISOString would throw on it).
    deadAt: Number.isFinite(d.deadAt) && d.deadAt > 0 ? new Date(d.deadAt).toISOString() : undefined,
    // One line per letter: a multi-line error (a ZodError's JSON) would break the table.
    error: oneLine(d.error, 80),
  };
}

function oneLine(text: string, max: number): string {
  const line = text.replace(/\s*[\r\n]+\s*/g, ' ');
  return line.length > max ? `${line.slice(0, max - 3)}...` : line;
}

function need(positionals: string[], index: number, what: string): string {
  const v = positionals[index];
  if (v === undefined || v === '') throw new ConfigError(`"${positionals[0]}" needs ${what}.`);
  return v;
}

/** A command line being run: its command, flags and positionals, and where it prints. */
interface Invocation {
  command: string;
  flags: Flags;
  positionals: string[];
  io: CliIo;
}

/** `value` as JSON with --json, else `text()`. */
function print(inv: Invocation, value: unknown, text: () => string): void {
  inv.io.out(inv.flags.json ? jsonText(value) : text());
}

/** Bad usage unless the command line has at most `n` positionals (the command and its arguments). */
function expectArgs(inv: Invocation, n: number): void {
  const args = inv.positionals.length;
  if (args > n) throw new ConfigError(`"${inv.command}" takes ${n - 1} argument${n === 2 ? '' : 's'}, got ${args - 1}: ${inv.positionals.slice(1).join(' ')}`);
}

async function streamsCommand(inv: Invocation): Promise<void> {
  expectArgs(inv, 1);
  const streams = await withAdmin(inv.flags, inv.io.env, (a) => a.listStreams());
  print(inv, streams, () => table(streams as unknown as Record<string, unknown>[], ['key', 'type', 'partition', 'length']));
}

async function groupsCommand(inv: Invocation): Promise<void> {
  expectArgs(inv, 2);
  const type = need(inv.positionals, 1, 'an event type');
  const groups = await withTypeAdmin(inv.flags, inv.io.env, type, (a) => a.groups(type));
  // The headings say which counts are stream entries (a batch entry holds many events) and which are events.
  const rows = groups.map((g) => ({ ...g, lagEvents: approx(g.lagEvents, g.estimated), pendingEvents: approx(g.pendingEvents, g.estimated) }));
  const columns = ['group', 'consumers', 'pending', 'lag', 'trimmed', 'retrying', 'lagEvents', 'pendingEvents'];
  const labels = ['group', 'consumers', 'pending(entries)', 'lag(entries)', 'trimmed(entries)', 'retrying(events)', 'lag(events)', 'pending(events)'];
  print(inv, groups, () => table(rows, columns, labels));
}

/** An event count as text, `~` marking an estimate. */
function approx(n: number | undefined, estimated: boolean): string | undefined {
  return n === undefined ? undefined : `${estimated ? '~' : ''}${n}`;
}

async function pendingCommand(inv: Invocation): Promise<void> {
  expectArgs(inv, 3);
  const type = need(inv.positionals, 1, 'an event type');
  const group = need(inv.positionals, 2, 'a group');
  const p = await withTypeAdmin(inv.flags, inv.io.env, type, (a) => a.pending(type, group));
  print(
    inv,
    p,
    () =>
      `${p.total} pending entries\n${table(
        Object.entries(p.consumers).map(([consumer, pending]) => ({ consumer, pending })),
        ['consumer', 'pending'],
        ['consumer', 'pending(entries)'],
      )}`,
  );
}

async function dlqCommand(inv: Invocation): Promise<void> {
  expectArgs(inv, 2);
  const type = need(inv.positionals, 1, 'an event type');
  const limit = intFlag(inv.flags.limit, 'limit', 1, 1_000_000) ?? 100;
  const letters = await withTypeAdmin(inv.flags, inv.io.env, type, (a) => a.deadLetters(type, inv.flags.group, limit));
  // The table says when there may be more than it shows (the oldest `limit`).
  const more = letters.length === limit ? `\n(the oldest ${limit}; there may be more: --limit)` : '';
  print(inv, letters, () => table(letters.map(letterRow), ['ref', 'group', 'eventId', 'attempts', 'deadAt', 'error']) + more);
}

/** `replay` and `purge`: the dead letters the flags select, back to their retry stream or deleted. */
async function replayOrPurgeCommand(inv: Invocation): Promise<void> {
  const { command, flags } = inv;
  expectArgs(inv, 2);
  const type = need(inv.positionals, 1, 'an event type');
  const filtered = flags.group !== undefined || flags.id !== undefined;
  if (command === 'purge' && !filtered && !flags.all) {
    throw new ConfigError('purge deletes dead letters for good: give --group, --id, or --all for every dead letter of the type.');
  }
  const skipped: Record<ReplaySkipReason, number> = { undecodable: 0, 'no-group': 0, 'group-gone': 0 };
  const options = { group: flags.group, ids: flags.id, onSkip: (_: unknown, why: ReplaySkipReason) => void skipped[why]++ };
  const n = await withTypeAdmin(flags, inv.io.env, type, (a) => (command === 'replay' ? a.replayDeadLetters(type, options) : a.purgeDeadLetters(type, options)));
  if (command === 'purge') {
    print(inv, { purged: n }, () => `purged ${lettersText(n)}`);
    return;
  }
  // What replay left where it was, and why, so "replayed 0" is not a mystery.
  const why = [
    skipped.undecodable && `${skipped.undecodable} undecodable (inspect with dlq, then purge --id <ref>)`,
    skipped['no-group'] && `${skipped['no-group']} naming no group`,
    skipped['group-gone'] && `${skipped['group-gone']} whose group the stream no longer has`,
  ].filter(Boolean);
  print(inv, { replayed: n, skipped }, () => `replayed ${lettersText(n)}${why.length ? `; left in the DLQ: ${why.join(', ')}` : ''}`);
}

/** `partitions <type> [<n>]`: the recorded count, or raise it to n. */
async function partitionsCommand(inv: Invocation): Promise<void> {
  expectArgs(inv, 3);
  const type = need(inv.positionals, 1, 'an event type');
  const given = inv.positionals[2];
  const n = given === undefined ? undefined : Number(given);
  if (n !== undefined && (!Number.isInteger(n) || n < 1 || n > 4096)) throw new ConfigError(`"partitions" takes a count from 1 to 4,096, got "${given}".`);
  if (n === undefined) {
    const recorded = await withAdmin(inv.flags, inv.io.env, (a) => a.recordedPartitions(type));
    print(inv, { type, partitions: recorded ?? null }, () => (recorded === undefined ? `${type}: no partition count recorded` : `${type}: ${recorded} partitions`));
    return;
  }
  const { from } = await withAdmin(inv.flags, inv.io.env, (a) => a.setPartitions(type, n));
  print(inv, { type, from: from ?? null, partitions: n }, () => `${type}: ${from === undefined ? 'recorded' : `${from} -> `}${n} partitions`);
}

function lettersText(k: number): string {
  return `${k} dead letter${k === 1 ? '' : 's'}`;
}

/** Runs the command of `inv` (bad usage when there is no such command). */
function runCommand(inv: Invocation): Promise<void> {
  switch (inv.command) {
    case 'streams':
      return streamsCommand(inv);
    case 'groups':
      return groupsCommand(inv);
    case 'pending':
      return pendingCommand(inv);
    case 'dlq':
      return dlqCommand(inv);
    case 'replay':
    case 'purge':
      return replayOrPurgeCommand(inv);
    case 'partitions':
      return partitionsCommand(inv);
    default:
      throw new ConfigError(`Unknown command "${inv.command}". Commands: streams, groups, pending, dlq, replay, purge, partitions (--help).`);
  }
}

async function run(argv: string[], io: CliIo): Promise<number> {
  const { values: flags, positionals } = parse(argv);
  if (flags.help || positionals.length === 0) {
    io.out(USAGE);
    return flags.help ? 0 : 2;
  }
  const command = positionals[0]!;
  checkFlags(command, flags);
  await runCommand({ command, flags, positionals, io });
  return 0;
}

/** Indented JSON; compact where a dead letter's event nests deeper than JSON.stringify recurses. */
function jsonText(value: unknown): string {
  try {
    return JSON.stringify(value, null, 2);
  } catch (err) {
    if (!(err instanceof RangeError)) throw err;
    return stringifyAnyDepth(value);
  }
}

/** Runs the CLI; returns the exit code. Errors are printed as one line with their code. */
export async function runOpsCli(argv: string[], io: CliIo): Promise<number> {
  try {
    return await run(argv, io);
  } catch (err) {
    const e = err as Error & { code?: string };
    // Bad usage: ConfigError (ours, or the transport block's), or parseArgs' own (unknown option, missing value).
    const usage = err instanceof ConfigError || (typeof e.code === 'string' && e.code.startsWith('ERR_PARSE_ARGS'));
    const code = err instanceof EventlaneError ? ` [${err.code}]` : '';
    // The transport names its own options; here they come from the CLI's flags.
    const message = e.message
      .replace(/transport\.commandTimeoutMs/g, '--timeout-ms')
      .replace(/transport\.url instead/g, '--url instead')
      .replace(/transport\.url/g, '--url (or $REDIS_URL)')
      .replace(/transport\.cluster(\.nodes)?/g, '--cluster')
      .replace(/transport\.prefix/g, '--prefix')
      // Credentials come from --url or the --cluster seeds alone.
      .replace(/, or (in|of) transport\.redisOptions/g, '');
    io.err(`eventlane-redis: ${message}${code}`);
    return usage ? 2 : 1;
  }
}
