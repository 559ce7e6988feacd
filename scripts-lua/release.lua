-- release.lua: free a held lease by id and hand its weight to the queue.
-- KEYS: see lib.lua.
-- ARGV: 1 id
-- Returns 1 when released, 0 when the lease was not held.
local id = ARGV[1]
settle()
if not info(id) then
  return 0
end
drop_holder(id)
redis.call('HINCRBY', M, 'released', 1)
promote()
return 1
