-- cancel.lua: withdraw a waiter; release its grant if it got one.
-- KEYS: see lib.lua.
-- ARGV: 1 id
-- Returns 1 when a waiter or a grant was removed, 0 otherwise.
local id = ARGV[1]
settle()
local removed = 0
if redis.call('ZSCORE', Q, id) then
  drop_waiter(id)
  removed = 1
end
local w = holder(id)
if w then
  drop_holder(id, w)
  add('released', 1)
  removed = 1
end
promote()
return finish(removed)
