-- status.lua: read a resource without changing it (no settle).
-- KEYS: see lib.lua.
-- ARGV: none
-- Returns {now, meta (flat HGETALL), live holders (id, decl, info, expiry)...
--          as a flat list, then waiters (id, record) as a flat list}
-- as {now, meta, holders, waiters}.
local live = {}
local ids = redis.call('ZRANGEBYSCORE', H, '(' .. int(now), '+inf', 'WITHSCORES')
for i = 1, #ids, 2 do
  local id = ids[i]
  live[#live + 1] = id
  live[#live + 1] = redis.call('HGET', D, id) or ''
  live[#live + 1] = redis.call('HGET', X, id) or ''
  live[#live + 1] = ids[i + 1]
end
local ws = {}
local wids = redis.call('ZRANGE', Q, 0, -1)
for _, id in ipairs(wids) do
  local exp = num(redis.call('ZSCORE', QE, id))
  if exp > now then
    ws[#ws + 1] = id
    ws[#ws + 1] = redis.call('HGET', QD, id) or ''
  end
end
return {int(now), redis.call('HGETALL', M), live, ws}
