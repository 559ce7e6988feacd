-- release.lua: free a held lease by id and hand its weight to the queue.
-- KEYS: see lib.lua.
-- ARGV: 1 id, 2 secret, 3 the caller's notification channel (optional):
--       its waiters granted here are told in the reply, not on it
-- Returns 1 when released, 0 when the lease was not held, -1 when the
-- secret does not prove id (nothing changed); released with weight
-- handed to waiters on ARGV[3], {1, then id, token, expiry ms, limit in
-- force of each} (tell() in lib.lua).
local id = ARGV[1]
if not proven(id, ARGV[2]) then
  return -1
end
-- The meta fields release reads, with the record, in one HMGET (load()
-- below, or the fast path, which reads them by position), and what the
-- fast path read.
local F = {'used', 'released', 'qlen', 'minexp', 'policy'}
local v

--[[fast]]
-- Fast path: held, nobody queued, no holder expired (this one included),
-- no queue policy (whose counts release keeps, see lib.lua): the same
-- writes as below, straight (hold() in lib.lua: the hold duration goes
-- into the ring).
v = redis.call('HMGET', S, F[1], F[2], F[3], F[4], F[5], '#' .. id, 'holdn')
do
  local q, w, acq = v[3], nil, nil
  if v[6] and not v[5] and (not q or q == '0') then -- held, no policy, nobody queued (qlen as lib.lua writes it)
    w, acq = string.match(v[6], REC_W_ACQ)
  end
  local used, minexp, hn, rel = tonumber(v[1] or 0), tonumber(v[4] or 0), tonumber(v[7] or 0), tonumber(v[2] or 0)
  if acq and hn and rel and hn % 1 == 0 and minexp and now < minexp and used and used >= w + 0 then
    redis.call('ZREM', H, id)
    redis.call('HSET', S, 'used', string.format('%d', used - w),
      'released', string.format('%d', rel + 1),
      'hold:' .. string.format('%d', hn % HOLDS), string.format('%d', math.max(0, now - acq)),
      'holdn', string.format('%d', hn + 1))
    redis.call('HDEL', S, '#' .. id)
    return 1
  end
end

--[[lib]]

load(F, id, v)
if v then
  m.holdn = v[7]
end
settle()
local r = record(id)
if not r then
  return finish(0)
end
hold(r)
drop_holder(id, parse_rec(id, r) + 0)
add('released', 1)
if m.qlen > 0 then
  slow()
  own_ch = ARGV[3]
  promote()
  if #handed > 0 then
    return finish({1, unpack(handed)})
  end
end
return finish(1)
