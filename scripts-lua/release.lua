-- release.lua: free a held lease by id and hand its weight to the queue.
-- KEYS: see lib.lua.
-- ARGV: 1 id
-- Returns 1 when released, 0 when the lease was not held.
local id = ARGV[1]
load({'used', 'released', 'qlen', 'minexp'}, id)
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
