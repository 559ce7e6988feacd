-- acquire.lua: grant, refuse, queue, or claim a grant handed to a waiter.
-- KEYS: see lib.lua.
-- ARGV: 1 id, 2 limit, 3 weight, 4 ttl ms, 5 mode ('fail'|'wait'),
--       6 queue ttl ms, 7 notification channel, 8 declaration JSON,
--       9 holders to report when not granted, 10 '1' when id is new (never
--       sent before: it cannot be queued or granted yet)
-- Returns reply(): code 1 granted, 0 refused, 2 queued, -1 weight above
-- the limit in force.
local id, limit, weight, ttl = ARGV[1], tonumber(ARGV[2]), tonumber(ARGV[3]), tonumber(ARGV[4])
local mode, qttl, channel, decl, n = ARGV[5], tonumber(ARGV[6]), ARGV[7], ARGV[8], tonumber(ARGV[9])
local new = ARGV[10] == '1'

-- The limit in force changes only when the resource is idle; a process
-- asking for another limit meanwhile is recorded as drift.
local function adopt_limit()
  if meta.limit ~= limit then
    if meta.limit == 0 or (meta.used == 0 and queue_empty) then
      set('limit', limit)
    else
      if meta.drift ~= limit then
        set('drift', limit)
      end
      return
    end
  end
  if meta.drift ~= 0 and meta.used == 0 and queue_empty then
    set('drift', 0)
  end
end

settle()

-- Already granted (a release handed it to this waiter): claim it.
local w, tok, acq, hb, ttl0, d
if not new then
  w, tok, acq, hb, ttl0, d = holder(id)
end
if w then
  local exp = now + ttl
  redis.call('ZADD', H, exp, id)
  set_holder(id, w, tok, acq, now, ttl, d)
  return reply(1, tok, exp)
end

adopt_limit()
if weight > meta.limit then
  drop_waiter(id)
  return reply(-1)
end

if new or queue_empty or not redis.call('ZSCORE', Q, id) then
  if queue_empty and meta.used + weight <= meta.limit then
    local t2, exp = grant(id, weight, ttl, decl)
    return reply(1, t2, exp)
  end
  if mode ~= 'wait' then
    add('busy', 1)
    return reply(0, 0, 0, 0, n)
  end
  add('seq', 1)
  redis.call('ZADD', Q, meta.seq, id)
  redis.call('HSET', QD, id, int(weight) .. ' ' .. int(ttl) .. ' ' .. int(now) .. ' ' .. channel .. ' ' .. decl)
  add('waited', 1)
end
redis.call('ZADD', QE, now + qttl, id)
return reply(2, 0, 0, redis.call('ZRANK', Q, id) + 1, n)
