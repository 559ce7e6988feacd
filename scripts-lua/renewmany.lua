-- renewmany.lua: renew many leases in one call (Backend.RenewBatch), for
-- a process's heartbeat. embed.go puts renew.lua, whole (head.lua, its
-- fast path, lib.lua), in a function renew_one(KEYS, ARGV) before this:
-- each lease is renewed exactly as one call of renew.lua would, with its
-- own keys, arguments, time and reply; only the round trip is shared.
-- KEYS: the six keys of lib.lua per lease, lease i's (from 0) at
--       6i+1..6i+6 (on a Cluster, every key of a call in one slot).
-- ARGV: 1 n, the ARGV of renew.lua per lease; then lease i's n values
--       at 2+ni..1+n(i+1).
-- Returns one reply per lease, in order: renew.lua's reply, or {-3,
-- message} when its renewal raised an error (it changed nothing: the
-- scripts raise before any write), which leaves the others renewed.
local n = ARGV[1] + 0
local out = {}
for i = 0, #KEYS / 6 - 1 do
  local ok, r = pcall(renew_one, {unpack(KEYS, 6 * i + 1, 6 * i + 6)}, {unpack(ARGV, 2 + n * i, 1 + n * (i + 1))})
  if ok then
    out[i + 1] = r
  elseif type(r) == 'table' and r.err then
    out[i + 1] = {-3, r.err}
  else
    out[i + 1] = {-3, tostring(r)}
  end
end
return out
