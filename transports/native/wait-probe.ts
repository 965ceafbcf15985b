/**
 * The native transport's send-now hint (`Transport.sendNowProbe`). A topic's shared cells count, per
 * partition p, the consumer threads blocked waiting for p's events (cell p) and the waits started so far
 * (cell partitions + p); consumer threads update them around each blocking pop (consumer.ts).
 */

/**
 * A probe over `waiting` (2 x partitions cells) for one publishing bus: true once for each wait a consumer
 * starts on `partition`, false while nobody waits or for a wait it already said true for. One probe per bus
 * and type: what it said true for is its own.
 */
export function consumerWaitProbe(waiting: Int32Array): (partition: number) => boolean {
  const partitions = waiting.length >> 1;
  const saidFor = new Int32Array(partitions).fill(-1);
  return (partition: number): boolean => {
    if (Atomics.load(waiting, partition) === 0) return false;
    const wait = Atomics.load(waiting, partitions + partition);
    if (wait === saidFor[partition]) return false;
    saidFor[partition] = wait;
    return true;
  };
}
