/** The events of examples/native-workers.ts, shared with its handler module (examples/native-workers-handler.ts). */
import { z } from 'zod';
import { defineEvents } from '../src/index.js';

export const events = defineEvents({
  'trade.executed': z.object({ id: z.number().int(), sym: z.string(), px: z.number(), qty: z.number().int() }),
});
