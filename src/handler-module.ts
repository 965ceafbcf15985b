/**
 * Handlers that carry their event's schema: `defineHandler(events, type, fn)` types `fn` from the schema and
 * marks it with the event map and type, so a transport that loads a handler module itself (native worker
 * threads) can check events against the schema before the handler runs, as the bus does for the handler
 * functions it is given. The mark is a `Symbol.for` key: it is found whichever copy of eventlane (its
 * ES module or CommonJS build) made it.
 */
import type { EventHandler } from './bus-types.js';
import { UnknownEventError } from './errors.js';
import type { EventMap, EventName } from './events.js';

const MARK = Symbol.for('eventlane.handler.event');

/** What `defineHandler` marked a handler with. */
export interface HandlerEvent {
  readonly events: EventMap;
  readonly type: string;
}

/**
 * `handler`, typed for events of `type` and marked with its schema. Export it from a handler module (default
 * export, or `handler`) so worker threads check each event against the schema when `validateOnConsume` is
 * on; it may be passed to `bus.subscribe` as any handler function.
 * @example
 * export default defineHandler(events, 'trade.executed', async (event, ctx) => { ... });
 */
export function defineHandler<M extends EventMap, K extends EventName<M>>(events: M, type: K, handler: EventHandler<M, K>): EventHandler<M, K> {
  if (!events.names.includes(type)) throw new UnknownEventError(type, events.names);
  const marked = ((event, ctx) => handler(event, ctx)) as EventHandler<M, K>;
  Object.defineProperty(marked, MARK, { value: { events, type } satisfies HandlerEvent });
  return marked;
}

/** The event map and type `defineHandler` marked `fn` with, if it did. */
export function handlerEvent(fn: unknown): HandlerEvent | undefined {
  return typeof fn === 'function' ? ((fn as unknown as Record<symbol, HandlerEvent | undefined>)[MARK] ?? undefined) : undefined;
}
