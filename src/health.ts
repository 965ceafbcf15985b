/**
 * What `bus.health()` reports: read from state the bus and its transport keep as they run, never from a round
 * trip to a server, so a probe answers at once even while the server does not.
 */

/** The last error a transport's connection reported. */
export interface HealthError {
  readonly name: string;
  readonly message: string;
  /** When it was reported (ms since the epoch). */
  readonly at: number;
}

export interface TransportHealth {
  /** The transport's type (`redis-streams`, `native`, `memory`, ...). */
  readonly type: string;
  /** Every connection the transport needs is up (in-process transports: until closed). */
  readonly connected: boolean;
  /** When `connected` last changed, or when the transport started (ms since the epoch). */
  readonly since: number;
  readonly lastError?: HealthError | undefined;
}

/**
 * - `running`: delivering (or waiting for events);
 * - `reconnecting`: its transport cannot reach the events (a Redis connection is down, a native worker thread
 *   is being replaced); it resumes on its own;
 * - `stalled`: every handler slot has been held, with no handler started, for the probe's `stallMs`;
 * - `closed`: closed by the application or by `bus.close()`.
 */
export type SubscriptionState = 'running' | 'reconnecting' | 'stalled' | 'closed';

/** What a transport tells of one subscription (`TransportSubscription.health`). */
export interface SubscriptionProgress {
  readonly state: SubscriptionState;
  /** When a handler last started (ms since the epoch, to the delivery pass); undefined: none yet, or not known. */
  readonly lastDeliveryAt: number | undefined;
}

export interface SubscriptionHealth extends SubscriptionProgress {
  readonly type: string;
  readonly group: string;
  readonly consumer: string;
}

export interface BusHealth {
  /** The transport is connected and every subscription is `running`: ready to serve. */
  readonly ok: boolean;
  readonly transport: TransportHealth;
  readonly subscriptions: readonly SubscriptionHealth[];
}

export interface HealthOptions {
  /** A subscription is `stalled` when all its handler slots stayed busy and no handler started for this long. @default 30000 */
  readonly stallMs?: number;
}

/** The state of a subscription of several delivery engines (partitions, members): the worst of theirs, the latest delivery. */
export function combineProgress(parts: readonly SubscriptionProgress[]): SubscriptionProgress {
  const rank: Record<SubscriptionState, number> = { running: 0, stalled: 1, reconnecting: 2, closed: 3 };
  let state: SubscriptionState = 'running';
  let last: number | undefined;
  for (const p of parts) {
    if (rank[p.state] > rank[state]) state = p.state;
    if (p.lastDeliveryAt !== undefined && (last === undefined || p.lastDeliveryAt > last)) last = p.lastDeliveryAt;
  }
  return { state, lastDeliveryAt: last };
}
