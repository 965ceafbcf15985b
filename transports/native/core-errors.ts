/**
 * The eventlane errors for what the native partition core throws or refuses: a record too large for the
 * arena, a closed core, a full ring under backpressure 'error', a group whose rings cannot be made (too many
 * lanes, or no memory for them). Anything else the core throws becomes a NativeError.
 */
import { BackpressureError, ClosedError, EventlaneError, NativeError, PayloadTooLargeError } from '../../src/errors.js';
import type { PublishUnit } from '../../src/transport.js';
import { ringBytes, type PartitionCore } from '../../native/loader.js';
import type { NativeGroup } from './group.js';

/**
 * Groups (lanes of rings) the addon's core holds at once (native/src/core.h kMaxLanes): a removed group's
 * lane counts until its consumer threads have exited. The JS core has no bound.
 */
const MAX_LANES = 4096;

/** What the core threw, as the error a publish or subscribe rejects with. */
export function coreError(err: unknown): Error {
  const code = (err as { code?: string }).code;
  if (code === 'ERR_PAYLOAD_TOO_LARGE') {
    const m = /record of (\d+) bytes exceeds the limit of (\d+)/.exec((err as Error).message);
    return new PayloadTooLargeError(Number(m?.[1] ?? 0), Number(m?.[2] ?? 0), 'transport.maxEventBytes (the ring arena holds four of the largest event)');
  }
  if (code === 'ERR_CLOSED') return new ClosedError('native transport');
  if (err instanceof EventlaneError) return err;
  return new NativeError(err instanceof Error ? err.message : String(err), { cause: err });
}

/** `error` backpressure: the group's ring of the unit's partition had no room for it. */
export function fullError(core: PartitionCore, group: NativeGroup, unit: PublishUnit): BackpressureError {
  const err = new BackpressureError(core.stats(group.lane, unit.partition)[5]!, core.capacity);
  err.message = `Partition ${unit.partition} of "${unit.type}" (group "${group.name}") is full (${core.capacity} events); backpressure is 'error'.`;
  return err;
}

/** Why the rings of new group `group` (`partitions` of them) could not be made: a NativeError naming the options that size them. */
export function laneError(err: unknown, group: string, core: PartitionCore, partitions: number): Error {
  const code = (err as { code?: string }).code;
  if (/too many lanes/.test((err as Error).message)) {
    return new NativeError(
      `Cannot create consumer group "${group}": this transport has ${MAX_LANES} groups alive at once, the most it can (a deleted group counts until its consumer threads have exited); delete groups nobody consumes any more (transport.deleteGroup), or reuse group names`,
      { cause: err },
    );
  }
  if (code !== 'ERR_NATIVE_ALLOC' && !(err instanceof RangeError && /allocation failed/i.test(err.message))) return coreError(err);
  const perRing = ringBytes(core.capacity, core.arenaBytes);
  const total = ((perRing * partitions) / 2 ** 20).toFixed(0);
  return new NativeError(
    `Cannot allocate the rings of group "${group}": ${partitions} partition(s) x ${perRing} bytes (${total} MiB); lower transport.partitions, capacity or maxEventBytes. ${(err as Error).message}`,
    { cause: err },
  );
}
