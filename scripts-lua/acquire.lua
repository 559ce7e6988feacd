-- acquire.lua: grant, refuse, queue, or claim a grant handed to a waiter.
-- KEYS: see lib.lua.
-- ARGV: 1 id, 2 limit, 3 weight, 4 ttl ms, 5 mode ('fail'|'wait'),
--       6 queue ttl ms, 7 notification channel, 8 declaration JSON,
--       9 holders to report when not granted
-- Returns reply(): code 1 granted, 0 refused, 2 queued, -1 weight above
-- the limit in force.
local id, limit, weight, ttl = ARGV[1], tonumber(ARGV[2]), tonumber(ARGV[3]), tonumber(ARGV[4])
local mode, qttl, channel, decl, n = ARGV[5], tonumber(ARGV[6]), ARGV[7], ARGV[8], tonumber(ARGV[9])

settle()

-- Already granted (a release handed it to this waiter): claim it.
local w, tok = info(id)
if w then
  local exp = now + ttl
  redis.call('ZADD', H, exp, id)
  local _, _, acq = info(id)
  set_info(id, w, tok, acq, now, ttl)
  return reply(1, tok, exp, 0, 0)
end

-- The limit in force changes only when the resource is idle; a process
-- asking for another limit meanwhile is recorded as drift.
local lim = num(redis.call('HGET', M, 'limit'))
if lim == 0 or (num(redis.call('HGET', M, 'used')) == 0 and redis.call('ZCARD', Q) == 0) then
  lim = limit
  redis.call('HSET', M, 'limit', lim)
  redis.call('HDEL', M, 'drift')
elseif lim ~= limit then
  redis.call('HSET', M, 'drift', limit)
end
if weight > lim then
  redis.call('ZREM', Q, id)
  redis.call('ZREM', QE, id)
  redis.call('HDEL', QD, id)
  return reply(-1, 0, 0, 0, 0)
end

local queued = redis.call('ZSCORE', Q, id)
if not queued then
  if redis.call('ZCARD', Q) == 0 and num(redis.call('HGET', M, 'used')) + weight <= lim then
    local t2, exp = grant(id, weight, ttl, decl)
    return reply(1, t2, exp, 0, 0)
  end
  if mode ~= 'wait' then
    redis.call('HINCRBY', M, 'busy', 1)
    return reply(0, 0, 0, 0, n)
  end
  local seq = redis.call('HINCRBY', M, 'seq', 1)
  redis.call('ZADD', Q, seq, id)
  redis.call('HSET', QD, id, int(weight) .. ' ' .. int(ttl) .. ' ' .. int(now) .. ' ' .. channel .. ' ' .. decl)
  redis.call('HINCRBY', M, 'waited', 1)
end
redis.call('ZADD', QE, now + qttl, id)
return reply(2, 0, 0, redis.call('ZRANK', Q, id) + 1, n)
