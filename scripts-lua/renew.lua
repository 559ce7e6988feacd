-- renew.lua: extend a held lease. Never re-acquires a lease that is gone.
-- KEYS: see lib.lua.
-- ARGV: 1 id, 2 ttl ms
-- Returns {1, expiry ms} when renewed, {0} when the lease is not held.
local id, ttl = ARGV[1], ARGV[2] + 0
load({'qlen', 'minexp'}, id)
settle()
local r = record(id)
if not r then
  return finish({0})
end
local exp = now + ttl
redis.call('ZADD', H, 'XX', string.format('%d', exp), id)
-- The heartbeat is the expiry minus the record's ttl: rewrite the record
-- only when the ttl changes.
local w, rttl, rest = string.match(r, '^(%d+) (%d+) (.*)$')
if rttl ~= ARGV[2] then
  set('#' .. id, w .. ' ' .. ARGV[2] .. ' ' .. rest)
end
expires(exp)
return finish({1, exp})
