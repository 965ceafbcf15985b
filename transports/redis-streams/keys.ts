/**
 * Key layout. Every key of a partition carries the same hash tag `{<type>:<partition>}`, so a
 * partition's stream, its dead-letter stream and its per-group retry streams share one Cluster slot,
 * and the partitions of a type spread over the slots.
 *
 *   <prefix>:{<type>:<p>}                 the partition stream (all groups read it)
 *   <prefix>:{<type>:<p>}:dlq             dead letters of every group of the partition
 *   <prefix>:{<type>:<p>}:retry:<group>   events of one group waiting for another attempt
 *   <prefix>:{<type>:<p>}:delayed         delayed events not yet due: a sorted set, id by due time (Redis ms)
 *   <prefix>:{<type>:<p>}:delayed:data    their entry fields: a hash, id -> JSON array of field/value pairs
 *   <prefix>:{<type>}:delayed:seq         the type's schedule counter: raised after each scheduling write
 */
export function streamKey(prefix: string, type: string, partition: number): string {
  return `${prefix}:{${type}:${partition}}`;
}

export function dlqKey(prefix: string, type: string, partition: number): string {
  return `${streamKey(prefix, type, partition)}:dlq`;
}

export function retryKey(prefix: string, type: string, partition: number, group: string): string {
  return `${streamKey(prefix, type, partition)}:retry:${group}`;
}

export function delayedKey(prefix: string, type: string, partition: number): string {
  return `${streamKey(prefix, type, partition)}:delayed`;
}

export function delayedDataKey(prefix: string, type: string, partition: number): string {
  return `${streamKey(prefix, type, partition)}:delayed:data`;
}

/** The type's schedule counter (its own slot: the type's partitions are spread over several). */
export function delayedSeqKey(prefix: string, type: string): string {
  return `${prefix}:{${type}}:delayed:seq`;
}

/** Parses a partition stream key back into type and partition (undefined for other keys). */
export function parseStreamKey(prefix: string, key: string): { type: string; partition: number } | undefined {
  const head = `${prefix}:{`;
  if (!key.startsWith(head) || !key.endsWith('}')) return undefined;
  const inner = key.slice(head.length, -1);
  const colon = inner.lastIndexOf(':');
  if (colon <= 0) return undefined;
  const partition = Number(inner.slice(colon + 1));
  if (!Number.isInteger(partition) || partition < 0) return undefined;
  return { type: inner.slice(0, colon), partition };
}
