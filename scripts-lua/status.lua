-- status.lua: read a resource without changing it (no settle, no finish).
-- KEYS: see lib.lua, then 7 the resource's stats hash (observe.lua), 8
-- its capacity hash (capacity.lua).
-- ARGV: none
-- Returns {now, meta (flat name, value pairs), live holders (id, record,
-- expiry flat), live waiters (id, record flat), stats (flat field, value
-- pairs), {paused_by, live_by, holdn, hold:0 .. hold:49} ('' when
-- absent), {policy in force, policy drift} ('' when none), capacity
-- leases (flat id, "want expiry_ms in_use granted" pairs, expired ones
-- too)}.
local live = {}
local ids = redis.call('ZRANGEBYSCORE', H, string.format('(%d', now), '+inf', 'WITHSCORES')
for i = 1, #ids, 2 do
  live[#live + 1] = ids[i]
  live[#live + 1] = redis.call('HGET', S, '#' .. ids[i]) or ''
  live[#live + 1] = ids[i + 1]
end
local ws = {}
for _, id in ipairs(redis.call('ZRANGE', Q, 0, -1)) do
  if (redis.call('ZSCORE', QE, id) or 0) + 0 > now then
    ws[#ws + 1] = id
    ws[#ws + 1] = redis.call('HGET', QD, id) or ''
  end
end
local names = {'limit', 'drift', 'acquired', 'busy', 'waited', 'released', 'lost',
  'reclaimed_expiry', 'reclaimed_dead', 'takeovers', 'paused', 'live', 'live_at', 'cooloff', 'quarantine',
  'adapt', 'adapt_max', 'adapt_ok', 'signal_at', 'local_grants'}
local meta = {}
for i, v in ipairs(redis.call('HMGET', S, unpack(names))) do
  if v then
    meta[#meta + 1] = names[i]
    meta[#meta + 1] = v
  end
end
local fields = {'paused_by', 'live_by', 'holdn'}
for i = 0, HOLDS - 1 do
  fields[#fields + 1] = 'hold:' .. i
end
local admin = redis.call('HMGET', S, unpack(fields))
for i = 1, #fields do
  admin[i] = admin[i] or ''
end
local pol = redis.call('HMGET', S, 'policy', 'pdrift')
return {now, meta, live, ws, redis.call('HGETALL', KEYS[7]), admin, {pol[1] or '', pol[2] or ''}, redis.call('HGETALL', KEYS[8])}
