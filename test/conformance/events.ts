/** The events of the conformance suite, apart from it: the worker threads' bridge module imports them too. */
import { z } from 'zod';
import { defineEvents } from '../../src/index.js';

export const conformanceEvents = defineEvents({
  'order.created': z.object({ orderId: z.string(), amount: z.number(), seq: z.number().int() }),
  'order.cancelled': z.object({ orderId: z.string() }),
});
