/** The events of the conformance suite: a target's worker-thread handler modules (`subscribeVia`) import them too. */
import { z } from 'zod';
import { defineEvents } from '../index.js';
import type { EventBus } from '../bus.js';

export const conformanceEvents = defineEvents({
  'order.created': z.object({ orderId: z.string(), amount: z.number(), seq: z.number().int() }),
  'order.cancelled': z.object({ orderId: z.string() }),
});

/** A bus of the suite's events. */
export type ConformanceBus = EventBus<typeof conformanceEvents>;
/** The payload of `order.created`, the type every test publishes. */
export type Order = { orderId: string; amount: number; seq: number };
