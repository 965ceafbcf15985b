/**
 * Run configuration: global defaults, flag parsing (every bad value is a one-line `UsageError`) and
 * merging scenario defaults with what the user set.
 */
import { InvalidArgumentError } from 'commander';
import { TRANSPORTS, type BenchConfig, type ConfigKey, type Scenario, type ScenarioFlag, type TransportName } from './types.js';

/** An error the CLI prints as one line and exits with status 2. */
export class UsageError extends Error {}

export const GLOBAL_DEFAULTS: BenchConfig = {
  transport: 'memory',
  messageCount: 10_000,
  messageSize: 128,
  batchSize: 4000,
  flushInterval: 0,
  publishers: 1,
  consumers: 1,
  partitions: 1,
  rate: 0,
  duration: 0,
  iterations: 3,
  warmup: 1,
  redisUrl: 'redis://127.0.0.1:6379',
  transportOptions: {},
  keyPrefix: 'eventlane-bench:',
};

export function intArg(name: string, min: number, max = Number.MAX_SAFE_INTEGER) {
  return (value: string): number => {
    const n = Number(value.replace(/_/g, ''));
    if (!/^[0-9]+(_[0-9]+)*$/.test(value) || !Number.isSafeInteger(n) || n < min || n > max) {
      throw new InvalidArgumentError(`${name} must be an integer from ${min} to ${max}, got "${value}".`);
    }
    return n;
  };
}

export function numArg(name: string, min: number, max = Number.MAX_SAFE_INTEGER) {
  return (value: string): number => {
    const n = Number(value);
    // Plain decimals only: Number() also reads '0x10' (16), '0b11' and ' 5 '.
    if (!/^([0-9]+(\.[0-9]*)?|\.[0-9]+)$/.test(value) || !Number.isFinite(n) || n < min || n > max) {
      throw new InvalidArgumentError(`${name} must be a number from ${min} to ${max}, got "${value}".`);
    }
    return n;
  };
}

/**
 * The smallest `--message-size`: a sized payload is the JSON `{"id":N,"body":"xx..."}`, the filler padding it to
 * the size asked, and without filler it is 17 bytes + the digits of N. Every payload id a run can send is below
 * 10^10 with the flags' limits (--message-count up to 10^9, warm-up ids after the measured ones, broker-throughput's
 * 10,000 per publisher): 27 bytes, so no payload is ever larger than its label says.
 */
export const MIN_MESSAGE_SIZE = JSON.stringify({ id: 9_999_999_999, body: '' }).length;
const MAX_MESSAGE_SIZE = 64 * 1024 * 1024;

/** `--message-size` (and each of `--message-sizes`): a size below MIN_MESSAGE_SIZE is refused, saying why. */
export function messageSizeArg(name: string) {
  const int = intArg(name, 0, MAX_MESSAGE_SIZE);
  return (value: string): number => {
    const n = int(value);
    if (n < MIN_MESSAGE_SIZE) {
      throw new InvalidArgumentError(
        `${name} ${n} is below the minimum of ${MIN_MESSAGE_SIZE} bytes: a payload is the JSON {"id":N,"body":"..."}, ${MIN_MESSAGE_SIZE} bytes without filler for the largest ids a run may send (10 digits), so a smaller size could not be sent as labelled.`,
      );
    }
    return n;
  };
}

/** A comma-separated list of `--message-sizes`. */
export function messageSizeListArg(name: string) {
  const one = messageSizeArg(name);
  return (value: string): number[] => value.split(',').map((s) => one(s.trim()));
}

export function intListArg(name: string, min: number, max = Number.MAX_SAFE_INTEGER) {
  const one = intArg(name, min, max);
  return (value: string): number[] => {
    const list = value.split(',').map((s) => one(s.trim()));
    if (list.length === 0) throw new InvalidArgumentError(`${name} needs at least one value.`);
    return list;
  };
}

export function transportArg(value: string): TransportName {
  const v = value === 'redis-streams' ? 'redis' : value;
  if (!(TRANSPORTS as readonly string[]).includes(v)) {
    throw new InvalidArgumentError(`transport must be one of ${TRANSPORTS.join(', ')}, got "${value}".`);
  }
  return v as TransportName;
}

export function urlArg(value: string): string {
  if (!/^rediss?:\/\/[^\s]+$/.test(value)) throw new InvalidArgumentError(`redis-url must look like redis://host:port, got "${value}".`);
  return value;
}

/** `--transport-option key=value` (repeatable); values parse as JSON when they can. */
export function transportOptionArg(value: string, previous: Record<string, unknown> = {}): Record<string, unknown> {
  const eq = value.indexOf('=');
  if (eq <= 0) throw new InvalidArgumentError(`transport-option must be key=value, got "${value}".`);
  const key = value.slice(0, eq);
  const raw = value.slice(eq + 1);
  let parsed: unknown = raw;
  try {
    parsed = JSON.parse(raw);
  } catch {
    /* a plain string */
  }
  return { ...previous, [key]: parsed };
}

/**
 * One `--node-option`: a flag for the `node` of every benchmark child process (library rows and baselines
 * alike), e.g. `--max-semi-space-size=64`. Each flag is one argument starting with `--`; node itself
 * rejects a flag it does not know (the iteration fails with node's message).
 */
export function nodeOptionArg(value: string, previous: string[] = []): string[] {
  if (!/^--[a-z0-9][a-z0-9_-]*(=\S+)?$/i.test(value)) throw new InvalidArgumentError(`node-option must be one node flag such as --max-semi-space-size=64, got "${value}".`);
  return [...previous, value];
}

/** The CLI option names that map onto config fields. */
export const FLAG_KEYS: ConfigKey[] = [
  'transport',
  'messageCount',
  'messageSize',
  'batchSize',
  'flushInterval',
  'publishers',
  'consumers',
  'partitions',
  'rate',
  'duration',
  'iterations',
  'warmup',
  'redisUrl',
  'transportOptions',
];

/** The command-line flag of each config field that only some scenarios read. */
export const FLAG_NAMES: Record<ScenarioFlag, string> = {
  messageCount: '--message-count',
  messageSize: '--message-size',
  batchSize: '--batch-size',
  flushInterval: '--flush-interval',
  publishers: '--publishers',
  consumers: '--consumers',
  partitions: '--partitions',
  rate: '--rate',
  duration: '--duration',
};

/** Whether `key` is a field only some scenarios read (a flag `Scenario.takes` lists or not). */
export function isScenarioFlag(key: ConfigKey): key is ScenarioFlag {
  return key in FLAG_NAMES;
}

/** The flags a scenario takes, as the command line spells them. */
export function flagsTaken(scenario: Scenario): string[] {
  return scenario.takes.map((k) => FLAG_NAMES[k]);
}

/**
 * Scenario defaults, then the suite's quick settings (when asked), then what the user set.
 * Returns the config and the set of fields the user set explicitly.
 *
 * A flag the scenario does not read (not in `Scenario.takes`) would be written into the report's config as
 * if it had been used: by default (`unused: 'refuse'`, `run` and `matrix`) it is a UsageError naming the
 * flags and the scenario; with `unused: 'drop'` (`suite`) it is left out of this scenario's config and named
 * in `dropped`.
 */
export function resolveConfig(
  scenario: Scenario,
  flags: Partial<BenchConfig>,
  opts: { quick?: boolean; unused?: 'refuse' | 'drop' } = {},
): { config: BenchConfig; explicit: Set<ConfigKey>; dropped: ScenarioFlag[] } {
  const { user, explicit, dropped } = sortFlags(scenario, flags);
  if (dropped.length > 0 && opts.unused !== 'drop') {
    const names = dropped.map((k) => FLAG_NAMES[k]);
    throw new UsageError(
      `${names.join(', ')} ${names.length > 1 ? 'do' : 'does'} not apply to scenario "${scenario.name}", which takes ${flagsTaken(scenario).join(', ')} (and the flags every scenario takes); nothing was run.`,
    );
  }
  const transport = scenarioTransport(scenario, user.transport);
  // --redis-url is read by the redis transport and its ioredis baselines only; elsewhere it would be
  // recorded in the report's config while every row ran without Redis. `suite` leaves it out there.
  if (user.redisUrl !== undefined && transport !== 'redis') {
    if (opts.unused !== 'drop') throw new UsageError(`--redis-url applies to the redis transport only; scenario "${scenario.name}" runs on ${transport} here, without Redis; nothing was run.`);
    delete user.redisUrl;
  }
  const config: BenchConfig = {
    ...GLOBAL_DEFAULTS,
    ...scenario.defaults,
    ...(opts.quick ? scenario.quick : {}),
    ...user,
    transport,
  };
  return { config, explicit, dropped };
}

/**
 * Sorts the flags given: those the scenario reads go to `user` (the scenario flags among them also to
 * `explicit`); the scenario flags it does not take go to `dropped`, in FLAG_KEYS order.
 */
function sortFlags(scenario: Scenario, flags: Partial<BenchConfig>): { user: Partial<BenchConfig>; explicit: Set<ConfigKey>; dropped: ScenarioFlag[] } {
  const explicit = new Set<ConfigKey>();
  const user: Partial<BenchConfig> = {};
  const dropped: ScenarioFlag[] = [];
  for (const key of FLAG_KEYS) {
    if (flags[key] === undefined) continue;
    if (isScenarioFlag(key) && !scenario.takes.includes(key)) {
      dropped.push(key);
      continue;
    }
    (user as Record<string, unknown>)[key] = flags[key];
    if (isScenarioFlag(key)) explicit.add(key);
  }
  return { user, explicit, dropped };
}

/** The transport given, else the scenario's first transport; a UsageError when the scenario does not run on it. */
function scenarioTransport(scenario: Scenario, given: TransportName | undefined): TransportName {
  const transport = given ?? scenario.transports[0]!;
  if (!scenario.transports.includes(transport)) {
    throw new UsageError(`Scenario "${scenario.name}" runs on ${scenario.transports.join(', ')}, not "${transport}".`);
  }
  return transport;
}

/** `sweep` unless the user pinned the field, in which case just their value. */
export function sweep<T extends number>(explicit: ReadonlySet<ConfigKey>, key: ConfigKey, config: BenchConfig, values: T[]): number[] {
  return explicit.has(key) ? [config[key] as number] : values;
}
