-- status.lua: read a resource without changing it (no settle, no finish).
-- KEYS: see lib.lua.
-- ARGV: none
-- Returns {now, meta (flat HGETALL), live holders (id, record, expiry
-- flat), live waiters (id, record flat)}.
local live = {}
local ids = redis.call('ZRANGEBYSCORE', H, '(' .. int(now), '+inf', 'WITHSCORES')
for i = 1, #ids, 2 do
  live[#live + 1] = ids[i]
  live[#live + 1] = redis.call('HGET', X, ids[i]) or ''
  live[#live + 1] = ids[i + 1]
end
local ws = {}
for _, id in ipairs(redis.call('ZRANGE', Q, 0, -1)) do
  if num(redis.call('ZSCORE', QE, id)) > now then
    ws[#ws + 1] = id
    ws[#ws + 1] = redis.call('HGET', QD, id) or ''
  end
end
return {int(now), redis.call('HGETALL', M), live, ws}
