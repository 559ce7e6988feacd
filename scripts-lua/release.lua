-- release.lua: free a held lease by id and hand its weight to the queue.
-- KEYS: see lib.lua.
-- ARGV: 1 id
-- Returns 1 when released, 0 when the lease was not held.
local id = ARGV[1]
settle()
local w = holder(id)
if not w then
  return finish(0)
end
drop_holder(id, w)
add('released', 1)
if not queue_empty then
  promote()
end
return finish(1)
