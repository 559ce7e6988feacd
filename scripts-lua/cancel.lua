-- cancel.lua: withdraw a waiter; release its grant if it got one.
-- KEYS: see lib.lua.
-- ARGV: 1 id, 2 secret
-- Returns 1 when a waiter or a grant was removed, 0 otherwise, -1 when
-- the secret does not prove id (nothing changed).
local id = ARGV[1]
if not proven(id, ARGV[2]) then
  return -1
end
load({'limit', 'used', 'qlen', 'minexp', 'policy'}, id)
settle()
slow()
local removed = 0
if drop_waiter(id) > 0 then
  removed = 1
end
local r = record(id)
if r then
  drop_holder(id, parse_rec(id, r) + 0)
  add('released', 1)
  removed = 1
end
promote()
return finish(removed)
