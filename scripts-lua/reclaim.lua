-- reclaim.lua: remove a holder whose owner was proven dead, if it still
-- holds the given token; a capacity lease's want goes with it.
-- KEYS: see lib.lua, then 7 the capacity hash (capacity.lua).
-- ARGV: 1 id, 2 token
-- Returns 1 when removed, 0 otherwise.
local id, token = ARGV[1], ARGV[2]
load({'limit', 'used', 'qlen', 'minexp', 'policy'}, id)
settle()
local r = record(id)
local w, _, tok
if r then
  w, _, tok = string.match(r, REC_NUMS)
end
if tok ~= token then
  return finish(0)
end
slow()
hold(r)
drop_holder(id, w + 0)
redis.call('HDEL', KEYS[7], id)
add('reclaimed_dead', 1)
event('reclaimed', id, tok, 'owner dead')
promote()
return finish(1)
