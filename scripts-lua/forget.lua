-- forget.lua: remove a resource that has been idle for the retention.
-- KEYS: see lib.lua, then 7 the resource's stats hash (observe.lua), 8
--       its capacity leases' wants (capacity.lua): both go with it.
-- ARGV: 1 retention in ms
-- Returns 1 when every key of the resource was deleted (its state hash
-- left as a tombstone), else 0.
--
-- Idle: no holder and no waiter, not paused, no live limit (admin.lua),
-- not cooling off, no live capacity lease (one wanting nothing is its
-- process's lease still).
-- The first call that finds the resource idle marks it (S field idle =
-- "token waited since_ms"); a grant changes the token and an enqueue the
-- waited count, so a later call that finds
-- the same mark at least the retention old knows that nothing was granted
-- or queued in between. The last token must also lie behind the server's
-- clock in microseconds (it does unless grants outran the clock): the
-- next grant then takes its token from the clock (lib.lua's grant),
-- above it.
local retention = ARGV[1] + 0
load({'used', 'qlen', 'minexp', 'token', 'waited', 'paused', 'live', 'limit', 'known'})
-- A tombstone (below) and nothing else in S: forgotten already. What ops
-- that make no state wrote beside it since (an event of a degraded
-- signal, stats) goes, as the file backend forgets them; the tombstone
-- stays. A tombstone with other fields (an adaptive limit, a cool-off)
-- is forgotten as any state is, below.
if get('limit') == 0 and get('known') > 0 and redis.call('HLEN', S) == 1 then
  redis.call('DEL', H, Q, QE, QD, E, KEYS[7], KEYS[8])
  return 0
end
settle()
local mark = redis.call('HGET', S, 'idle')
-- leased: a capacity lease is live (capacity.lua's entries, "want
-- expiry_ms in_use granted").
local function leased()
  local c = redis.call('HGETALL', KEYS[8]) -- HGETALL: the commands granted in docs/redis.md's ACL
  for i = 2, #c, 2 do
    local exp = string.match(c[i], '^%d+ (%d+) ')
    if exp and exp + 0 > now then
      return true
    end
  end
  return false
end
-- A paused resource, one with a live limit (admin.lua), one cooling off
-- (forgetting it would end the cool-off) or one leased is kept.
if get('used') > 0 or get('qlen') > 0 or get('paused') > 0 or get('live') > 0 or redis.call('ZRANGE', H, 0, 0)[1] or cooling() or
    leased() then
  if mark then
    set('idle', false)
  end
  return finish(0)
end
local want = string.format('%d %d ', get('token'), get('waited'))
if not mark or string.sub(mark, 1, #want) ~= want then
  set('idle', want .. string.format('%d', now))
  return finish(0)
end
local since = string.sub(mark, #want + 1) + 0
if now - since < retention or get('token') >= sec * 1000000 + usec then
  return finish(0)
end
redis.call('DEL', H, S, Q, QE, QD, E, KEYS[7], KEYS[8])
-- The tombstone: a machine that witnessed the state (witnessed() in
-- lib.lua) finds it forgotten, not lost. It lasts TOMBSTONE_MS, longer
-- than a machine keeps a witness unrenewed (Go's witnessKeep); a birth
-- takes its expiry off (born()).
redis.call('HSET', S, 'known', string.format('%d', FLOOR))
redis.call('PEXPIRE', S, TOMBSTONE_MS)
return 1
