/**
 * Partition choice: FNV-1a (32-bit) of the key, so the same key always lands on the same partition
 * and keeps its order; round-robin for events without a key. Not a cryptographic hash: a few ns per key.
 */
export function hashKey(key: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < key.length; i++) {
    h ^= key.charCodeAt(i);
    h = Math.imul(h, 0x01000193);
  }
  return h >>> 0;
}

export function partitionForKey(key: string, partitions: number): number {
  return partitions === 1 ? 0 : hashKey(key) % partitions;
}
