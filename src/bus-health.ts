/**
 * `bus.health()` and `subscription.health()`: state the transport and the delivery engines keep, read with no
 * round trip (src/health.ts).
 */
import { z } from 'zod';
import { parseConfig } from './config.js';
import type { BusHealth, HealthOptions, SubscriptionHealth, SubscriptionProgress, TransportHealth } from './health.js';
import type { Subscription } from './bus-types.js';
import type { Transport, TransportSubscription } from './transport.js';

const healthOptionsSchema = z.object({ stallMs: z.number().int().positive().default(30_000) }).strict();

export function stallMsOf(options: HealthOptions | undefined): number {
  return parseConfig(healthOptionsSchema, options ?? {}, 'health options').stallMs;
}

/** A subscription's progress; a transport that tells none is taken as running until closed. */
export function progressOf(inner: TransportSubscription, closed: boolean, stallMs: number): SubscriptionProgress {
  if (closed) return { state: 'closed', lastDeliveryAt: inner.health?.(stallMs).lastDeliveryAt };
  return inner.health?.(stallMs) ?? { state: 'running', lastDeliveryAt: undefined };
}

/** The transport's connection; a transport that tells none is connected from `startedAt` until the bus closes. */
export function transportHealth(transport: Transport, startedAt: number, closedAt: number | undefined): TransportHealth {
  if (closedAt !== undefined) return { type: transport.type, connected: false, since: closedAt };
  const own = transport.health?.();
  return own === undefined ? { type: transport.type, connected: true, since: startedAt } : { type: transport.type, ...own };
}

export function busHealth(transport: TransportHealth, subscriptions: Iterable<Subscription>, stallMs: number): BusHealth {
  const subs: SubscriptionHealth[] = [];
  for (const s of subscriptions) subs.push(s.health({ stallMs }));
  const ok = transport.connected && subs.every((s) => s.state === 'running' || s.state === 'closed');
  return { ok, transport, subscriptions: subs };
}
