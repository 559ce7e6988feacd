-- takeover.lua: replace holder old by a new lease with its weight and a
-- new, higher fencing token, in one step. The caller has decided that the
-- takeover is allowed (owner proven dead, or forced). An old lease that
-- ended by its expiry or a reclaim is taken over too, when its slot is
-- free: the new lease gets ARGV[6]'s weight, and the takeover is recorded.
-- KEYS: see lib.lua.
-- ARGV: 1 old id, 2 new id, 3 ttl ms, 4 declaration JSON, 5 event detail,
--       6 weight when old has ended
-- Returns {1, token, expiry} (numbers as strings), {0} when old is
-- not held and did not end that way, or {2} when it did but there is no
-- room for it now.
local old, id, ttl, decl, detail = ARGV[1], ARGV[2], ARGV[3] + 0, ARGV[4], ARGV[5]
load({'limit', 'used', 'qlen', 'minexp', 'token', 'policy'}, old)
settle()
local r = record(old)
local w, _, tok
slow()
if r then
  w, _, tok = parse_rec(old, r)
  w = w + 0
else
  local kind
  kind, tok = ended(old)
  if kind ~= 'expired' and kind ~= 'reclaimed' then
    return finish({0})
  end
  w = ARGV[6] + 0
  -- New room, as a grant: not while waiters queue or grants are held
  -- back (paused, quarantine).
  if get('qlen') > 0 or get('used') + w > get('limit') or held_back() then
    return finish({2})
  end
end
-- The token grant() will give, for the event, which is written first: a
-- failed write must leave nothing half done.
local nxt = math.max(get('token') + 1, FLOOR)
event('takeover', old, tok, detail .. string.format(', token %d', nxt))
if r then
  hold(r)
  -- Under a queue policy the new lease takes the old one's class and key.
  local a = policy() and pol_attrs(old)
  drop_holder(old, w)
  if a then
    local i, key = string.match(a, '^(%d+) (.*)$')
    pol_as = i and {i + 0, key, true}
  end
end
add('takeovers', 1)
local t2, exp = grant(id, w, ttl, decl)
return finish({1, string.format('%d', t2), string.format('%d', exp)})
