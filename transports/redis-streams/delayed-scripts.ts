/**
 * The Lua scripts of delayed delivery (docs/delayed-delivery.md). Each runs on one partition's keys, which
 * share its hash tag (one Cluster slot), so each is one atomic step: an event is moved to its stream once,
 * by whichever process runs the move first, and a cancel and a move never both take one event.
 */
import { Script } from './scripts.js';

/**
 * KEYS: the sorted set, the data hash, the partition stream. ARGV: the most events to move, then the XADD
 * trimming args (none, `MAXLEN ~ n` or `MINID ~ id`). Moves the events due by Redis's clock (TIME, in ms to
 * the microsecond, as the scores are) to the stream, oldest due first, each as the per-event entry its data
 * holds. A stored value that is not an entry's fields (a JSON array of an even number of strings, which
 * someone else may have written) is moved as an entry of two fields, `delayed` (the value) and `id`, which
 * consumers dead-letter as malformed: it neither stays to block the events due after it nor is lost.
 * Replies `{moved, next due or -1, now, moved as malformed}`, the times as decimal text (ms).
 */
export const moveDue = new Script(`
local t = redis.call('TIME')
local us = tonumber(t[2])
local now = t[1] .. string.format('%03d.%03d', math.floor(us / 1000), us % 1000)
local ids = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', now, 'LIMIT', 0, tonumber(ARGV[1]))
local function xadd(fields)
  local args = { KEYS[3] }
  for j = 2, #ARGV do args[#args + 1] = ARGV[j] end
  args[#args + 1] = '*'
  for _, v in ipairs(fields) do args[#args + 1] = v end
  redis.call('XADD', unpack(args))
end
local function entry(f)
  local fields = cjson.decode(f)
  if type(fields) ~= 'table' or #fields == 0 or #fields % 2 ~= 0 then error('not an entry') end
  for j = 1, #fields do
    if type(fields[j]) ~= 'string' then error('not an entry') end
  end
  xadd(fields)
end
local malformed = 0
for i = 1, #ids do
  local f = redis.call('HGET', KEYS[2], ids[i])
  if f then
    if not pcall(entry, f) then
      malformed = malformed + 1
      xadd({ 'delayed', f, 'id', ids[i] })
    end
    redis.call('HDEL', KEYS[2], ids[i])
  end
  redis.call('ZREM', KEYS[1], ids[i])
end
local nxt = redis.call('ZRANGE', KEYS[1], 0, 0, 'WITHSCORES')
return { #ids, nxt[2] or '-1', now, malformed }
`);

/**
 * KEYS: the sorted set, the data hash. ARGV: triples of id, due score and entry fields (JSON). Stores each
 * event's data, then its id in the sorted set, as one step. Replies how many it stored.
 */
export const storeDelayed = new Script(`
for i = 1, #ARGV, 3 do
  redis.call('HSET', KEYS[2], ARGV[i], ARGV[i + 2])
  redis.call('ZADD', KEYS[1], ARGV[i + 1], ARGV[i])
end
return #ARGV / 3
`);

/** KEYS: the sorted set, the data hash. ARGV: the id. Removes the event not yet moved: replies 1 when it did, else 0. */
export const cancelDelayed = new Script(`
if redis.call('ZREM', KEYS[1], ARGV[1]) == 1 then
  redis.call('HDEL', KEYS[2], ARGV[1])
  return 1
end
return 0
`);
