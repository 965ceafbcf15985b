/**
 * The transport side of delayed delivery (`publish(type, data, { delayMs | deliverAt })`,
 * docs/delayed-delivery.md). A transport that stores scheduled events itself (durably, across processes)
 * implements `TransportScheduling`; for one that does not, the bus holds them in memory until due
 * (src/due-queue.ts) and then publishes them as any event.
 */
import type { OutgoingEvent } from './transport.js';

export interface TransportScheduling {
  /**
   * Stores `events` (one call's, of one type) to be delivered to every group no earlier than `dueAt` (epoch ms,
   * this host's clock; possibly in the past: deliver at once). Resolves once they are stored as durably as the
   * transport stores a publish; from then on they are delivered even if this process ends. Each event enters its
   * partition as a normal publish when due, once, whichever process moves it.
   */
  schedule(events: readonly OutgoingEvent[], dueAt: number): Promise<void>;
  /** Removes the scheduled event `id` of `type` not yet due: true when it did, false when there was none such. */
  cancel(type: string, id: string): Promise<boolean>;
}
