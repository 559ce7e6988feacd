-- takeover.lua: replace holder old by a new lease with its weight and a
-- new, higher fencing token, in one step. The caller has decided that the
-- takeover is allowed (owner proven dead, or forced).
-- KEYS: see lib.lua.
-- ARGV: 1 old id, 2 new id, 3 ttl ms, 4 declaration JSON, 5 event detail
-- Returns {1, token, expiry} (numbers as strings), or {0} when old is
-- not held.
local old, id, ttl, decl, detail = ARGV[1], ARGV[2], ARGV[3] + 0, ARGV[4], ARGV[5]
load({'limit', 'used', 'qlen', 'minexp', 'token'}, old)
settle()
local r = record(old)
if not r then
  return finish({0})
end
local w, _, tok = parse_rec(old, r)
slow()
-- The token grant() will give, for the event, which is written first: a
-- failed write must leave nothing half done.
local nxt = math.max(get('token') + 1, FLOOR)
event('takeover', old, tok, detail .. string.format(', token %d', nxt))
drop_holder(old, w + 0)
add('takeovers', 1)
local t2, exp = grant(id, w + 0, ttl, decl)
return finish({1, string.format('%d', t2), string.format('%d', exp)})
