/**
 * What the publish and process subscribers share: a guard that keeps a subscriber's failure from reaching
 * the publisher (a `diagnostics_channel` subscriber that throws fails the process), the `within` that makes
 * a span's context current, and how a failure is recorded on a span.
 */
import { context, diag, SpanStatusCode, type Attributes, type Context, type Span } from '@opentelemetry/api';
import type { Within } from '../diagnostics.js';
import { ERROR_TYPE, errorType } from './semconv.js';

/** `fn`, with whatever it throws reported to OpenTelemetry's diagnostic logger instead. */
export function guard<M>(what: string, fn: (msg: M) => void): (msg: M) => void {
  return (msg) => {
    try {
      fn(msg);
    } catch (err) {
      diag.error(`eventlane instrumentation: ${what} failed`, err);
    }
  };
}

/** A user's hook, called with what it throws reported to the diagnostic logger. */
export function callHook<I>(hook: ((span: Span, info: I) => void) | undefined, span: Span, info: I, name: string): void {
  if (hook === undefined) return;
  try {
    hook(span, info);
  } catch (err) {
    diag.error(`eventlane instrumentation: ${name} threw`, err);
  }
}

/** A `within` that runs the work with `ctx` current, inside the one another subscriber set (`prev`). */
export function withinContext(prev: Within | undefined, ctx: Context): Within {
  if (prev === undefined) return (run) => context.with(ctx, run);
  return (run) => prev(() => context.with(ctx, run));
}

/** Marks `span` failed with `err`: `error.type`, status ERROR with the error's message, the exception recorded. */
export function failSpan(span: Span, err: unknown): void {
  span.setAttribute(ERROR_TYPE, errorType(err));
  if (err instanceof Error) {
    span.recordException(err);
    span.setStatus({ code: SpanStatusCode.ERROR, message: err.message });
  } else {
    span.setStatus({ code: SpanStatusCode.ERROR, message: String(err) });
  }
}

/** `attrs` with `error.type` of `err` when the operation failed. */
export function withError(attrs: Attributes, failed: boolean, err: unknown): Attributes {
  return failed ? { ...attrs, [ERROR_TYPE]: errorType(err) } : attrs;
}

/** Seconds since `startMs` (a `performance.now()` reading). */
export function secondsSince(startMs: number): number {
  return (performance.now() - startMs) / 1000;
}
