/**
 * docs/configuration.md from the config schemas: every option of `createEventBus`, `subscribe` and each
 * built-in transport, with its type and default read from the zod schema (as JSON Schema, input side) and its
 * description from the schema's or the option type's documentation comment, and at its top how many options
 * that is (`optionNames`). `npm run docs:config` writes it; a test fails when the committed page differs from
 * what this renders, or when the count exceeds `OPTION_LIMIT`.
 */
import { join } from 'node:path';
import { z } from 'zod';
import { busConfigSchema, removedOptionsOf, subscribeOptionsSchema, type RemovedOptions } from '../../src/config.js';
import { memoryConfigSchema } from '../../transports/memory/memory-transport.js';
import { nativeConfigSchema, nativeSubscribeSchema } from '../../transports/native/config.js';
import { noopConfigSchema } from '../../transports/noop/index.js';
import { redisStreamsConfigSchema, redisSubscribeSchema } from '../../transports/redis-streams/config.js';
import { optionDocs, type OptionDoc, type OptionDocs } from './jsdoc.js';

interface JsonSchema {
  type?: string;
  const?: unknown;
  enum?: unknown[];
  anyOf?: JsonSchema[];
  items?: JsonSchema;
  properties?: Record<string, JsonSchema>;
  additionalProperties?: JsonSchema | boolean;
  required?: string[];
  default?: unknown;
  minimum?: number;
  maximum?: number;
}

interface Section {
  readonly title: string;
  readonly intro: string;
  readonly schema: z.ZodType;
  /** Where the descriptions are: [file, declaration, path prefix]; earlier sources win. */
  readonly docs: ReadonlyArray<readonly [string, string, string?]>;
}

const SECTIONS: readonly Section[] = [
  {
    title: '`createEventBus(config)`',
    intro: 'The bus. `transport` takes one of the transport blocks below.',
    schema: busConfigSchema,
    docs: [
      ['src/bus-types.ts', 'EventBusConfig'],
      ['src/config.ts', 'busConfigSchema'],
      ['src/config.ts', 'batchingSchema', 'batching.'],
    ],
  },
  {
    title: '`bus.subscribe(type, options, handler)`',
    intro: 'Taken by every transport; each transport takes the further options of its own section.',
    schema: subscribeOptionsSchema,
    docs: [
      ['src/bus-types.ts', 'CommonSubscribeOptions'],
      ['src/config.ts', 'subscribeOptionsSchema'],
      ['src/config.ts', 'backoffSchema', 'retry.backoff.'],
    ],
  },
  {
    title: "`transport: { type: 'memory' }`",
    intro: 'In process, one broker per name.',
    schema: memoryConfigSchema,
    docs: [['transports/memory/memory-transport.ts', 'memoryConfigSchema']],
  },
  {
    title: "`transport: { type: 'redis-streams' }`",
    intro: 'Redis Streams, single node, Sentinel (through `redisOptions`) or Cluster.',
    schema: redisStreamsConfigSchema,
    docs: [
      ['transports/redis-streams/config.ts', 'redisStreamsObject'],
      ['transports/redis-streams/config.ts', 'topicSchema', 'topics.*.'],
    ],
  },
  {
    title: 'redis-streams subscribe options',
    intro: 'Beside the common subscribe options.',
    schema: redisSubscribeSchema,
    docs: [['transports/redis-streams/config.ts', 'redisSubscribeSchema']],
  },
  {
    title: "`transport: { type: 'native' }`",
    intro: 'In process, on the lock-free core.',
    schema: nativeConfigSchema,
    docs: [['transports/native/config.ts', 'nativeConfigObject']],
  },
  {
    title: 'native subscribe options',
    intro: 'Beside the common subscribe options.',
    schema: nativeSubscribeSchema,
    docs: [['transports/native/config.ts', 'nativeSubscribeSchema']],
  },
  {
    title: "`transport: { type: 'noop' }`",
    intro: 'Discards every event (for measuring the library itself).',
    schema: noopConfigSchema,
    docs: [['transports/noop/index.ts', 'noopConfigSchema']],
  },
];

/** Type parameters of the documented interfaces, by what they stand for. */
const TYPE_NAMES: Readonly<Record<string, string>> = { M: 'what `defineEvents` returns' };
/** The description of an option whose comment is on its parent: a transport block's `type`. */
const IMPLIED: Readonly<Record<string, string>> = { type: 'Selects this transport.' };

const cell = (s: string): string => s.replace(/\|/g, '\\|').replace(/\n/g, ' ');
const literal = (v: unknown): string => (typeof v === 'string' ? `'${v}'` : JSON.stringify(v));

function range(s: JsonSchema): string {
  const min = s.minimum;
  const max = s.maximum !== undefined && s.maximum < Number.MAX_SAFE_INTEGER ? s.maximum : undefined;
  if (min !== undefined && max !== undefined) return ` ${min}..${max}`;
  return min !== undefined ? ` ≥ ${min}` : max !== undefined ? ` ≤ ${max}` : '';
}

export function typeOf(s: JsonSchema): string {
  if (s.const !== undefined) return literal(s.const);
  if (s.enum !== undefined) return s.enum.map(literal).join(' | ');
  if (s.anyOf !== undefined) return s.anyOf.map(typeOf).join(' or ');
  switch (s.type) {
    case 'array':
      return `array of ${s.items ? typeOf(s.items) : 'any'}`;
    case 'object':
      if (s.properties !== undefined) return 'object';
      return typeof s.additionalProperties === 'object' && Object.keys(s.additionalProperties).length > 0 ? `map of ${typeOf(s.additionalProperties)}` : 'object';
    case 'integer':
    case 'number':
      return `${s.type}${range(s)}`;
    case undefined:
      return 'any';
    default:
      return s.type;
  }
}

function defaultOf(s: JsonSchema, doc: OptionDoc | undefined, required: boolean): string {
  if (doc?.default !== undefined) return doc.default;
  if (s.default !== undefined && (typeof s.default !== 'object' || s.default === null)) return `\`${literal(s.default)}\``;
  return required ? '**required**' : '—';
}

/** One row of a section's table: an option, by its dotted path within the section, and what the page says of it. */
export interface OptionRow {
  readonly path: string;
  /** As the page shows it; `object` for a group of the options below it or a map of a library's options. */
  readonly type: string;
  readonly default: string;
  readonly description: string;
}

/** A section as the page shows it: its table's rows, in order, and the options it refuses by name. */
export interface SectionTable {
  readonly title: string;
  readonly intro: string;
  readonly rows: readonly OptionRow[];
  readonly removed: RemovedOptions;
}

/** The most options eventlane takes (issue 43): a value that can be derived from the others is not an option. */
export const OPTION_LIMIT = 50;

/** Options the JSON Schema does not list but the documented type declares (`events`, `logger`). */
function declaredOnly(docs: OptionDocs, listed: ReadonlySet<string>): OptionRow[] {
  return [...docs]
    .filter(([path, d]) => d.typeText !== undefined && !path.includes('.') && !listed.has(path))
    .map(([path, d]) => ({ path, type: TYPE_NAMES[d.typeText!] ?? `\`${d.typeText!}\``, default: d.optional ? '—' : '**required**', description: d.text }));
}

function rows(s: JsonSchema, prefix: string, docs: OptionDocs, listed: Set<string>): OptionRow[] {
  const out: OptionRow[] = [];
  const objectRecord = typeof s.additionalProperties === 'object' && s.additionalProperties.properties !== undefined ? s.additionalProperties : undefined;
  for (const [name, prop] of Object.entries(s.properties ?? {})) {
    const path = prefix + name;
    listed.add(path);
    const doc = docs.get(path);
    out.push({ path, type: typeOf(prop), default: defaultOf(prop, doc, s.required?.includes(name) ?? false), description: doc?.text ?? IMPLIED[path] ?? '' });
    out.push(...rows(prop, `${path}.`, docs, listed));
  }
  if (objectRecord !== undefined) out.push(...rows(objectRecord, `${prefix}*.`, docs, listed));
  return out;
}

function tableOf(section: Section, root: string): SectionTable {
  const docs: OptionDocs = new Map();
  for (const [file, name, prefix] of [...section.docs].reverse()) for (const [k, v] of optionDocs(join(root, file), name, prefix)) docs.set(k, v);
  const json = z.toJSONSchema(section.schema, { io: 'input', unrepresentable: 'any' }) as JsonSchema;
  const listed = new Set<string>();
  const table = rows(json, '', docs, listed);
  const { title, intro } = section;
  return { title, intro, rows: [...declaredOnly(docs, listed), ...table], removed: removedOptionsOf(section.schema) };
}

/** Every section of the page, for the repository at `root`. */
export function configTables(root: string): SectionTable[] {
  return SECTIONS.map((s) => tableOf(s, root));
}

/**
 * The options a user sets, each name once across `tables`: rows of type `object` (a group of the options below
 * it, or a map of a library's options passed through) are not options of their own, and a top-level `type`
 * (only transport blocks have one) is the bus's `transport.type`. Options of the same name in two sections (`partitions`) are one.
 */
export function optionNames(tables: readonly SectionTable[]): string[] {
  const names = new Set<string>();
  for (const table of tables) {
    for (const row of table.rows) if (row.type !== 'object') names.add(row.path === 'type' ? 'transport.type' : row.path);
  }
  return [...names];
}

function renderRow(row: OptionRow): string {
  return `| \`${row.path}\` | ${cell(row.type)} | ${cell(row.default)} | ${cell(row.description)} |`;
}

function renderSection(table: SectionTable): string {
  const lines = [`## ${table.title}`, '', table.intro, '', '| option | type | default | description |', '| --- | --- | --- | --- |', ...table.rows.map(renderRow)];
  const removed = Object.entries(table.removed);
  if (removed.length > 0) lines.push('', 'Removed options (a `ConfigError` names what replaces each):', '', ...removed.map(([name, instead]) => `- \`${name}\`: ${instead}`));
  return lines.join('\n');
}

/** The page for `tables` (in .prettierignore: prettier would pad every table row to the widest). */
export function renderTables(tables: readonly SectionTable[]): string {
  const head = [
    '# Configuration reference',
    '',
    '<!-- Generated by `npm run docs:config` from the config schemas and their documentation comments; do not edit. -->',
    '',
    'Every option eventlane takes, with its type and default. An unknown or misspelt option is a `ConfigError`',
    'naming it (and the option it most likely means); so is a value out of range. Types are checked at compile',
    'time too.',
    '',
    `eventlane takes ${optionNames(tables).length} options in all: each option name counts once across the tables below (every transport's`,
    "`type` as `transport.type`), and `object` rows (groups of the options below them, maps of ioredis's options) do",
    `not count. A test keeps the count at most ${OPTION_LIMIT}; a value that can be derived from the others is not an option.`,
  ].join('\n');
  return `${[head, ...tables.map(renderSection)].join('\n\n')}\n`;
}

/** The whole page, for the repository at `root`. */
export function renderConfigReference(root: string): string {
  return renderTables(configTables(root));
}
