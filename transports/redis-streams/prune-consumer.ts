/**
 * Deleting a group's idle consumers. `XGROUP DELCONSUMER` drops the consumer's pending entries with it
 * (they are never redelivered), so "holds nothing" must still be true when the delete runs: a consumer
 * found idle by XINFO may read entries a moment later (a process restarting under a stable name). One
 * Lua script checks it has nothing pending and deletes it, atomically. Where the server refuses scripts,
 * the check and the delete are two commands, and a delete that did drop entries is reported.
 */
import type { Client } from './connection.js';
import { Script } from './scripts.js';

// KEYS[1] stream; ARGV[1] group, ARGV[2] consumer. -1: it has entries pending, left alone; else 0 (deleted, nothing dropped).
const SCRIPT = new Script(`
if #redis.call('XPENDING', KEYS[1], ARGV[1], '-', '+', 1, ARGV[2]) > 0 then return -1 end
return redis.call('XGROUP', 'DELCONSUMER', KEYS[1], ARGV[1], ARGV[2])
`);

export type Pruned =
  /** Deleted; it held nothing. */
  | 'deleted'
  /** Not deleted: it has entries pending (it read since it was found idle). */
  | 'busy'
  /** Deleted without the atomic check (no scripts), and it did hold entries: they are no longer pending. */
  | { dropped: number };

/**
 * `onNoScripts` is called when this call finds that the server refuses scripts (once per client, as in
 * `claimOwned`, whichever of the two finds it first).
 */
export async function deleteIfNothingPending(client: Client, stream: string, group: string, consumer: string, onNoScripts?: (err: Error) => void): Promise<Pruned> {
  // Without scripts, DELCONSUMER alone: its reply is the number of pending entries it dropped.
  const plain = () => client.xgroup('DELCONSUMER', stream, group, consumer);
  const n = Number(await SCRIPT.runOr(client, stream, [group, consumer], plain, onNoScripts));
  return n < 0 ? 'busy' : n > 0 ? { dropped: n } : 'deleted';
}
