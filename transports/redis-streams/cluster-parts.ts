/**
 * A Redis Cluster write, split per master. Each master's part (its units, in the write's order) is written on
 * its own: it waits only for its own partitions' turns and connections, has its own deadline, and its units
 * are reported written as soon as that master replied (`WriteSettlement.written`), whatever another master does.
 * A master stalled or in failover then holds only the publishes whose events go to it.
 */
import { TransportError } from '../../src/errors.js';
import type { PublishUnit, WriteResult, WriteSettlement } from '../../src/transport.js';
import { addTo } from './replica-wait.js';

/** Where units with no master known for their slot go (one part for all of them). */
const UNKNOWN = '';

/**
 * Writes `units` as one part per master (`masterOf`, as the client's slot map says now) with `writePart`; as a
 * part settles, its written units are reported through `settle`. Resolves, once every part has settled, with
 * the result per unit of the whole write (what it says of a unit already reported written is ignored).
 */
export async function writePerMaster(
  units: readonly PublishUnit[],
  masterOf: (unit: PublishUnit) => string | undefined,
  writePart: (part: readonly PublishUnit[]) => Promise<WriteResult>,
  settle: WriteSettlement,
): Promise<WriteResult> {
  const parts = new Map<string, number[]>();
  for (let u = 0; u < units.length; u++) addTo(parts, masterOf(units[u]!) ?? UNKNOWN, u);
  if (parts.size === 1) return writePart(units);
  let failed: (Error | undefined)[] | undefined;
  await Promise.all(
    [...parts.values()].map(async (members) => {
      const res = await writePart(members.map((u) => units[u]!)).then(
        (r) => r,
        (err: unknown) => members.map(() => (err instanceof Error ? err : new TransportError(`Transport write failed: ${String(err)}`))),
      );
      for (let k = 0; k < members.length; k++) {
        const err = res?.[k];
        if (err === undefined) settle.written(members[k]!);
        else (failed ??= new Array<Error | undefined>(units.length).fill(undefined))[members[k]!] = err;
      }
    }),
  );
  return failed;
}
