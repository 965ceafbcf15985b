/**
 * `publish()` and `publishMany()` under the `eventlane:publish` tracing channel (src/diagnostics.ts), taken only
 * while someone subscribes: the call runs inside the channel's `start` stores and inside the `within` a `start`
 * subscriber set (so an instrumentation's context is current), and headers a `start` subscriber set are added
 * to the call's events, under the caller's own.
 */
import { publishChannel, type PublishMessage } from './diagnostics.js';
import type { EventHeaders, PublishOptions } from './envelope.js';

/** `options` with `headers` added under the caller's own (undefined when there are none to add). */
export function withHeaders<O extends PublishOptions | undefined>(options: O, headers: EventHeaders | undefined): O {
  if (headers === undefined) return options;
  return { ...options, headers: { ...headers, ...options?.headers } } as O;
}

/** Runs `send` (the untraced call, with the options it is given) as one traced publish of `count` events. */
export function tracedPublish<O extends PublishOptions | undefined>(type: string, transport: string, count: number, options: O, send: (options: O) => Promise<void>): Promise<void> {
  const msg: PublishMessage = { type, transport, count, options, headers: undefined, within: undefined };
  return publishChannel.tracePromise(() => sendWithin(msg, options, send), msg);
}

/** `send` with the headers `start` set, inside the `within` it set. */
function sendWithin<O extends PublishOptions | undefined>(msg: PublishMessage, options: O, send: (options: O) => Promise<void>): Promise<void> {
  const o = withHeaders(options, msg.headers);
  return msg.within === undefined ? send(o) : msg.within(() => send(o));
}
