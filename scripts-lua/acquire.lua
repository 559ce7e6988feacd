-- acquire.lua: grant, refuse, queue, or claim a grant handed to a waiter.
-- KEYS: see lib.lua.
-- ARGV: 1 id, 2 limit, 3 weight, 4 ttl ms, 5 mode ('fail'|'wait'),
--       6 queue ttl ms, 7 notification channel, 8 declaration JSON,
--       9 holders to report when not granted, 10 '1' when id is new (never
--       sent before: it cannot be queued or granted yet), 11 secret,
--       12 how long to hold grants back on detecting lost data, ms (0:
--       never; see quarantine() in lib.lua), 13 '1' when the caller saw
--       id queued here (evidence that the resource had state)
-- Returns {1, token, expiry ms} when granted (the slow path adds a fourth
-- field: 1 when the resource had no state, new or forgotten, else 0);
-- otherwise {code, 0, 0,
-- position in the queue, limit, used, queue length, drift, now ms, then
-- (id, record, expiry) of up to ARGV[9] holders}, code 0 refused, 2
-- queued, -1 weight above the limit in force; {-2} when the secret does
-- not prove id (nothing changed); {-3, kind, by, detail, time ms} when id,
-- not new, was withdrawn from the queue by someone else (withdrawn() in
-- lib.lua): nothing changed.
local id, limit, weight, ttl = ARGV[1], ARGV[2] + 0, ARGV[3] + 0, ARGV[4] + 0
if not proven(id, ARGV[11]) then
  return {-2}
end
local new = ARGV[10] == '1'
-- The meta fields acquire reads, in one HMGET (load() below, or the fast
-- path, which reads them by position), and what the fast path read.
local F = {'limit', 'used', 'drift', 'token', 'acquired', 'qlen', 'minexp', 'quarantine', 'paused', 'live'}
local v

--[[fast]]
-- Fast path: a new request, the limit in force is the one asked for (no
-- drift), nobody queued, no holder expired, not held back (quarantine,
-- paused), and room. The same writes as
-- grant() below, straight.
if new then
  v = redis.call('HMGET', S, unpack(F))
  -- used below zero would let too many in: the full path recounts it.
  local used, minexp = tonumber(v[2] or 0), tonumber(v[7] or 0)
  if (v[1] or 0) + 0 == limit and tonumber(v[6] or 0) == 0 and (v[3] or 0) + 0 == 0 and not v[8] and not v[9]
      and used and minexp and used >= 0 and now < minexp and used + weight <= limit then
    local tok = math.max((v[4] or 0) + 1, FLOOR)
    local exp = now + ttl
    redis.call('ZADD', H, string.format('%d', exp), id)
    local rec = string.format(REC, weight, ttl, tok, now) .. ARGV[8]
    local acquired = string.format('%d', (v[5] or 0) + 1)
    if exp < minexp then
      redis.call('HSET', S, 'token', string.format('%d', tok), 'used', string.format('%d', used + weight),
        'acquired', acquired, '#' .. id, rec, 'minexp', string.format('%d', exp))
    else
      redis.call('HSET', S, 'token', string.format('%d', tok), 'used', string.format('%d', used + weight),
        'acquired', acquired, '#' .. id, rec)
    end
    return {1, tok, exp}
  end
end

--[[lib]]

local mode, channel, decl = ARGV[5], ARGV[7], ARGV[8]
local fresh -- 1 when the resource had no state (Go then lists it again)
loss_ms = (ARGV[12] or 0) + 0

-- reply builds the reply above (read by Go's parseReply).
local function reply(code, tok, exp, pos, n)
  if code == 1 then
    return finish({1, tok, exp, fresh})
  end
  flush()
  local r = {code, 0, 0, pos or 0, get('limit'), get('used'), get('qlen'), get('drift'), now}
  if n and n > 0 then
    slow()
    for _, v in ipairs(holders(n)) do
      r[#r + 1] = v
    end
  end
  return r
end

load(F, not new and id, v)
fresh = m.limit == 0 and 1 or 0
if fresh == 1 and ARGV[13] == '1' then
  quarantine(string.format('waiter %s re-queued into a resource without state', id))
end
settle()

-- Already granted (a release handed it to this waiter): claim it.
if not new then
  local r = record(id)
  if r then
    local _, rttl, tok = parse_rec(id, r)
    local exp = now + ttl
    redis.call('ZADD', H, string.format('%d', exp), id)
    if rttl ~= ARGV[4] then
      set('#' .. id, (string.gsub(r, REC_TTL, '%1' .. ARGV[4], 1)))
    end
    expires(exp)
    return reply(1, tok + 0, exp)
  end
end

-- A waiter whose queue entry someone else withdrew learns who and why,
-- and is not queued again.
if not new and (m.qlen == 0 or not redis.call('ZSCORE', Q, id)) then
  slow()
  local kind, by, detail, at = withdrawn(id)
  if kind then
    return finish({-3, kind, by, detail, at})
  end
end

local queue_empty = m.qlen == 0
in_force(limit, id, m.used == 0 and queue_empty)

if weight > m.limit then
  if not new then
    slow()
    drop_waiter(id)
  end
  return reply(-1)
end

if new or queue_empty or not redis.call('ZSCORE', Q, id) then
  if queue_empty and m.used + weight <= m.limit and not held_back() then
    local tok, exp = grant(id, weight, ttl, decl)
    return reply(1, tok, exp)
  end
  if mode ~= 'wait' then
    add('busy', 1)
    return reply(0, 0, 0, 0, ARGV[9] + 0)
  end
  add('seq', 1)
  redis.call('ZADD', Q, m.seq, id)
  redis.call('HSET', QD, id, string.format(WREC, weight, ttl, now, channel) .. decl)
  add('qlen', 1)
  add('waited', 1)
end
redis.call('ZADD', QE, now + ARGV[6], id)
return reply(2, 0, 0, redis.call('ZRANK', Q, id) + 1, ARGV[9] + 0)
