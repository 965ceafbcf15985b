/**
 * Re-claiming entries this consumer still owns, and only those. `XCLAIM <group> <me> 0 <id> JUSTID` takes an
 * entry whoever holds it: a consumer whose event loop stalled past `minIdleMs` would take back an entry that
 * another consumer had reclaimed meanwhile, and both would run the rest of it. Here one Lua script checks
 * each entry's owner (`XPENDING <id> <id> 1`) and claims it only if it is this consumer's, atomically;
 * the entries that are not (acked, or another consumer's) come back, so the caller can leave them to it.
 * A server that refuses scripts (ACL without +@scripting) gets the plain XCLAIM, and the check is lost.
 */
import type { Client } from './connection.js';
import { Script } from './scripts.js';

// KEYS[1] stream; ARGV[1] group, ARGV[2] consumer, ARGV[3] RETRYCOUNT ('' to leave it), ARGV[4..] ids.
const SCRIPT = new Script(`
local lost = {}
for i = 4, #ARGV do
  local id = ARGV[i]
  local p = redis.call('XPENDING', KEYS[1], ARGV[1], id, id, 1)
  if p[1] ~= nil and p[1][2] == ARGV[2] then
    if ARGV[3] == '' then
      redis.call('XCLAIM', KEYS[1], ARGV[1], ARGV[2], 0, id, 'JUSTID')
    else
      redis.call('XCLAIM', KEYS[1], ARGV[1], ARGV[2], 0, id, 'RETRYCOUNT', ARGV[3], 'JUSTID')
    end
  else
    lost[#lost + 1] = id
  end
end
return lost
`);

/** Ids per script call: each costs Redis two O(log n) lookups, so a call stays well under a millisecond. */
const CHUNK = 256;

/**
 * Resets the idle time of `ids` in `stream` (and sets their delivery count to `retryCount` when given) where
 * they are pending on `consumer`; resolves with the ids that are not: acknowledged, deleted, or claimed by
 * another consumer. Where the server refuses scripts, falls back to a plain `XCLAIM ... JUSTID` (no owner
 * check, nothing reported lost), calling `onNoScripts` the first time for that client.
 */
export async function claimOwned(client: Client, stream: string, group: string, consumer: string, ids: readonly string[], retryCount?: number, onNoScripts?: (err: Error) => void): Promise<string[]> {
  const lost: string[] = [];
  for (let i = 0; i < ids.length; i += CHUNK) {
    const chunk = ids.slice(i, i + CHUNK);
    const args = [group, consumer, retryCount === undefined ? '' : String(retryCount), ...chunk];
    // Without scripts: the plain XCLAIM, no owner check, nothing reported lost.
    const plain = () => plainClaim(client, stream, group, consumer, chunk, retryCount).then(() => []);
    lost.push(...((await SCRIPT.runOr(client, stream, args, plain, onNoScripts)) as string[]));
  }
  return lost;
}

function plainClaim(client: Client, stream: string, group: string, consumer: string, ids: string[], retryCount: number | undefined): Promise<unknown> {
  const retry = retryCount === undefined ? [] : ['RETRYCOUNT', retryCount];
  return (client as unknown as { xclaim(...a: (string | number)[]): Promise<unknown> }).xclaim(stream, group, consumer, 0, ...ids, ...retry, 'JUSTID');
}
