-- release.lua: free a held lease by id and hand its weight to the queue.
-- KEYS: see lib.lua.
-- ARGV: 1 id
-- Returns 1 when released, 0 when the lease was not held.
local id = ARGV[1]

-- Fast path: held, nobody queued, no holder expired (this one included):
-- the same writes as below, straight.
-- (v: the fields load() reads below, in its order.)
local v = redis.call('HMGET', S, 'used', 'released', 'qlen', 'minexp', '#' .. id)
if v[5] and (v[3] or 0) + 0 == 0 and now < (v[4] or 0) + 0 then
  redis.call('ZREM', H, id)
  redis.call('HSET', S, 'used', string.format('%d', (v[1] or 0) - string.match(v[5], '^%d+')),
    'released', string.format('%d', (v[2] or 0) + 1))
  redis.call('HDEL', S, '#' .. id)
  return 1
end

--[[lib]]

load({'used', 'released', 'qlen', 'minexp'}, id, v)
settle()
local r = record(id)
if not r then
  return finish(0)
end
drop_holder(id, string.match(r, '^%d+') + 0)
add('released', 1)
if m.qlen > 0 then
  slow()
  promote()
end
return finish(1)
