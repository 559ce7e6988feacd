-- many.lua: several acquires and releases in one call (batch.go, issue 27:
-- calls that goroutines of one process issue at the same instant). embed.go
-- puts acquire.lua and release.lua, whole (head.lua, fast path, lib.lua),
-- in functions acquire_one(KEYS, ARGV) and release_one(KEYS, ARGV) before
-- this: each request runs exactly as its own call of its script would,
-- with its own keys, arguments and reply; the call and the server's time
-- (batch_time, read once: embed.go's sharedTime) are shared, the
-- requests running at one instant, atomically.
-- KEYS: the six keys of lib.lua per request, request i's (from 0) at
--       6i+1..6i+6 (on a Cluster, every key of a call in one slot).
-- ARGV: per request, in order: 'a' (acquire) or 'r' (release), the count
--       c of its script's ARGV, then those c values.
-- Returns one reply per request, in order: its script's reply, or the
-- error it raised as a string (it changed nothing: the scripts raise
-- before any write), which leaves the others done.
local out, j = {}, 1
for i = 0, #KEYS / 6 - 1 do
  local op, c = ARGV[j], ARGV[j + 1] + 0
  local ok, r = pcall(op == 'a' and acquire_one or release_one, {unpack(KEYS, 6 * i + 1, 6 * i + 6)},
    {unpack(ARGV, j + 2, j + 1 + c)})
  j = j + 2 + c
  if ok then
    out[i + 1] = r
  elseif type(r) == 'table' and r.err then
    out[i + 1] = r.err
  else
    out[i + 1] = tostring(r)
  end
end
return out
