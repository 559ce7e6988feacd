-- renew.lua: extend a held lease. Never re-acquires a lease that is gone.
-- KEYS: see lib.lua.
-- ARGV: 1 id, 2 ttl ms
-- Returns {1, expiry ms} when renewed, {0} when the lease is not held.
local id, ttl = ARGV[1], tonumber(ARGV[2])
settle()
local w, tok, acq, _, _, decl = holder(id)
if not w then
  return finish({0})
end
local exp = now + ttl
redis.call('ZADD', H, 'XX', exp, id)
set_holder(id, w, tok, acq, now, ttl, decl)
return finish({1, int(exp)})
