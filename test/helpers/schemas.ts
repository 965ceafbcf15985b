/** Schemas shared by the tests of the schema compilers (serializer, JSON writer). */
import { z } from 'zod';

export const trade = z.object({ id: z.number(), sym: z.string(), px: z.number(), qty: z.number().int() });
export const nested = z.object({
  opt: z.string().optional(),
  when: z.number(),
  tags: z.array(z.string()),
  side: z.enum(['buy', 'sell']),
  kind: z.literal('limit'),
  flag: z.boolean(),
  note: z.string().nullable(),
  maybe: z.object({ a: z.number(), b: z.array(z.object({ c: z.boolean().optional() })) }).optional(),
  dflt: z.number().default(3),
  'we"ird key': z.string(),
});
