-- reclaim.lua: remove a holder whose owner was proven dead, if it still
-- holds the given token.
-- KEYS: see lib.lua.
-- ARGV: 1 id, 2 token
-- Returns 1 when removed, 0 otherwise.
local id, token = ARGV[1], ARGV[2]
settle()
local w, tok = holder(id)
if not w or int(tok) ~= token then
  return finish(0)
end
drop_holder(id, w)
add('reclaimed_dead', 1)
event('reclaimed', id, tok, 'owner dead')
promote()
return finish(1)
