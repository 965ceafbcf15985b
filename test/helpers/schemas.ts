/** Schemas and a helper shared by the tests of the schema compilers (serializer, JSON writers). */
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

/**
 * What a byte writer (`JsonWriter`, or a checking writer) writes for `value` after a prefix it must not touch:
 * the text written, or the negative code it returned.
 */
export function writtenAfterPrefix(write: (value: unknown, buf: Buffer, off: number) => number, value: unknown, room: number): string | number {
  const buf = Buffer.alloc(room + 3);
  buf.write('pre');
  const end = write(value, buf, 3);
  if (end < 0) return end;
  if (buf.toString('latin1', 0, 3) !== 'pre') throw new Error('the writer wrote before its offset');
  return buf.toString('utf8', 3, end);
}
