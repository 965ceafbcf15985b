/**
 * `EventlaneInstrumentation`'s options, their defaults and their check (a `ConfigError` names a bad one).
 */
import type { Span } from '@opentelemetry/api';
import { ConfigError, type ValidationIssue } from '../errors.js';
import type { EventEnvelope, PublishOptions } from '../envelope.js';
import type { DeliveryContext } from '../transport.js';

/** What `publishHook` is told of a `publish()` or `publishMany()` call. */
export interface PublishHookInfo {
  /** The event type. */
  readonly type: string;
  /** The transport's type (`messaging.system`). */
  readonly transport: string;
  /** Events in the call: 1 for `publish()`. */
  readonly count: number;
  /** The call's options as the caller passed them. */
  readonly options: Readonly<PublishOptions> | undefined;
}

/** What `processHook` is told of a handler run. */
export interface ProcessHookInfo {
  readonly event: EventEnvelope;
  readonly context: DeliveryContext;
  /** The transport's type (`messaging.system`), where the transport tells it. */
  readonly transport: string | undefined;
}

export interface EventlaneInstrumentationConfig {
  /**
   * Subscribe to eventlane's channels when constructed, as OpenTelemetry instrumentations do;
   * `registerInstrumentations` enables one constructed with `false`. `setConfig` does not change the state.
   * @default true
   */
  enabled?: boolean;
  /**
   * How a `process` span relates to the `send` span of the event it handles: `'link'` starts a trace of its
   * own with a link to the send span; `'child'` makes it the send span's child, in the producer's trace.
   * @default 'link'
   */
  processSpanParent?: 'link' | 'child';
  /** Called with each `send` span once it started, before the call runs: add attributes. Errors it throws are ignored. */
  publishHook?: (span: Span, info: PublishHookInfo) => void;
  /** Called with each `process` span once it started, before the handler runs. Errors it throws are ignored. */
  processHook?: (span: Span, info: ProcessHookInfo) => void;
}

/** The options with their defaults. */
export interface ResolvedConfig {
  readonly enabled: boolean;
  readonly processSpanParent: 'link' | 'child';
  readonly publishHook: ((span: Span, info: PublishHookInfo) => void) | undefined;
  readonly processHook: ((span: Span, info: ProcessHookInfo) => void) | undefined;
}

/** Each option's check: what it expects, said in an issue when its value fails. */
const CHECKS: Record<keyof EventlaneInstrumentationConfig, { ok: (v: unknown) => boolean; expected: string }> = {
  enabled: { ok: (v) => typeof v === 'boolean', expected: 'a boolean' },
  processSpanParent: { ok: (v) => v === 'link' || v === 'child', expected: "'link' or 'child'" },
  publishHook: { ok: (v) => typeof v === 'function', expected: 'a function' },
  processHook: { ok: (v) => typeof v === 'function', expected: 'a function' },
};

/** `config` checked, with the defaults filled in. */
export function resolveConfig(config: EventlaneInstrumentationConfig | undefined): ResolvedConfig {
  if (config === undefined) config = {};
  if (config === null || typeof config !== 'object') throw new ConfigError('The eventlane instrumentation expects a config object.');
  const issues: ValidationIssue[] = [];
  for (const [key, value] of Object.entries(config)) {
    const check = CHECKS[key as keyof EventlaneInstrumentationConfig] as (typeof CHECKS)[keyof typeof CHECKS] | undefined;
    if (check === undefined) issues.push({ path: [key], message: `unknown option (known: ${Object.keys(CHECKS).join(', ')})` });
    else if (value !== undefined && !check.ok(value)) issues.push({ path: [key], message: `expected ${check.expected}` });
  }
  if (issues.length > 0) {
    throw new ConfigError(`Invalid eventlane instrumentation config: ${issues.map((i) => `${i.path.join('.')}: ${i.message}`).join('; ')}`, issues);
  }
  const { enabled, processSpanParent, publishHook, processHook } = config;
  return { enabled: enabled ?? true, processSpanParent: processSpanParent ?? 'link', publishHook, processHook };
}
