-- lib.lua: shared prelude of every governor script (prepended by embed.go).
--
-- KEYS, the same in every script, all under one {hash tag} per resource:
--   1 h   zset  lease id -> expiry (ms, server time)
--   2 d   hash  lease id -> declaration JSON (opaque here)
--   3 x   hash  lease id -> "weight token acquired_ms heartbeat_ms ttl_ms"
--   4 q   zset  waiter id -> enqueue sequence (FIFO order)
--   5 qe  zset  waiter id -> queue expiry (ms)
--   6 qd  hash  waiter id -> "weight ttl_ms enqueued_ms channel declaration"
--   7 m   hash  meta: limit, used, token, seq, drift, counters
--   8 e   stream events (capped)
-- Time is the server's (TIME), never the client's.

local H, D, X, Q, QE, QD, M, E = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5], KEYS[6], KEYS[7], KEYS[8]

local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local nowus = tonumber(t[1]) * 1000000 + tonumber(t[2])

local function num(v)
  return tonumber(v or '0') or 0
end

local function int(v)
  return string.format('%.0f', v)
end

local function event(kind, id, token, detail)
  redis.call('XADD', E, 'MAXLEN', '~', 1000, '*',
    'kind', kind, 'lease', id, 'token', int(token or 0), 'detail', detail or '', 'at', int(now))
end

-- holder info: weight, token, acquired, heartbeat, ttl
local function info(id)
  local s = redis.call('HGET', X, id)
  if not s then
    return nil
  end
  local w, tok, acq, hb, ttl = string.match(s, '^(%d+) (%d+) (%d+) (%d+) (%d+)$')
  return tonumber(w), tonumber(tok), tonumber(acq), tonumber(hb), tonumber(ttl)
end

local function set_info(id, w, tok, acq, hb, ttl)
  redis.call('HSET', X, id, int(w) .. ' ' .. int(tok) .. ' ' .. int(acq) .. ' ' .. int(hb) .. ' ' .. int(ttl))
end

-- A fencing token is at least the server time in microseconds, so tokens
-- keep increasing even after a restart that lost every key.
local function next_token()
  local tok = math.max(num(redis.call('HGET', M, 'token')) + 1, nowus)
  redis.call('HSET', M, 'token', int(tok))
  return tok
end

local function drop_holder(id)
  local w = info(id) or 0
  redis.call('ZREM', H, id)
  redis.call('HDEL', D, id)
  redis.call('HDEL', X, id)
  if w > 0 then
    redis.call('HINCRBY', M, 'used', -w)
  end
  return w
end

local function waiter(id)
  local s = redis.call('HGET', QD, id)
  if not s then
    return nil
  end
  local w, ttl, enq, ch, decl = string.match(s, '^(%d+) (%d+) (%d+) (%S+) (.*)$')
  return tonumber(w), tonumber(ttl), tonumber(enq), ch, decl
end

local function drop_waiter(id)
  redis.call('ZREM', Q, id)
  redis.call('ZREM', QE, id)
  redis.call('HDEL', QD, id)
end

local function grant(id, w, ttl, decl)
  local tok = next_token()
  local exp = now + ttl
  redis.call('ZADD', H, exp, id)
  redis.call('HSET', D, id, decl)
  set_info(id, w, tok, now, now, ttl)
  redis.call('HINCRBY', M, 'used', w)
  redis.call('HINCRBY', M, 'acquired', 1)
  return tok, exp
end

-- Hand freed weight to the head of the queue, in order, while it fits.
-- The head blocks those behind it even if they are lighter, so a heavy
-- waiter is never starved. Each grantee alone is told, on its own channel.
local function promote()
  local lim = num(redis.call('HGET', M, 'limit'))
  local used = num(redis.call('HGET', M, 'used'))
  while true do
    local head = redis.call('ZRANGE', Q, 0, 0)[1]
    if not head then
      return
    end
    local w, ttl, enq, ch, decl = waiter(head)
    if not w then
      drop_waiter(head) -- queue entry without record: unusable
    else
      if used + w > lim then
        return
      end
      drop_waiter(head)
      grant(head, w, ttl, decl)
      used = used + w
      redis.call('PUBLISH', ch, head)
    end
  end
end

-- Drop expired holders and waiters, then hand freed weight on.
local function settle()
  local gone = redis.call('ZRANGEBYSCORE', H, '-inf', now)
  for _, id in ipairs(gone) do
    local _, tok = info(id)
    drop_holder(id)
    redis.call('HINCRBY', M, 'reclaimed_expiry', 1)
    event('expired', id, tok, '')
  end
  local wgone = redis.call('ZRANGEBYSCORE', QE, '-inf', now)
  for _, id in ipairs(wgone) do
    drop_waiter(id)
  end
  promote()
end

-- Holders for a refusal: count, then id, declaration, info, expiry of the
-- first n to expire.
local function holders(n)
  local out = {}
  local ids = redis.call('ZRANGE', H, 0, n - 1, 'WITHSCORES')
  for i = 1, #ids, 2 do
    local id = ids[i]
    out[#out + 1] = id
    out[#out + 1] = redis.call('HGET', D, id) or ''
    out[#out + 1] = redis.call('HGET', X, id) or ''
    out[#out + 1] = ids[i + 1]
  end
  return out
end

-- Reply shape shared by acquire (and read by Go's parseReply):
-- {code, token, expiry, position, limit, used, queue length, drift, now, holders...}
local function reply(code, tok, exp, pos, n)
  local r = {code, int(tok or 0), int(exp or 0), pos or 0,
    num(redis.call('HGET', M, 'limit')), num(redis.call('HGET', M, 'used')),
    redis.call('ZCARD', Q), num(redis.call('HGET', M, 'drift')), int(now)}
  if n and n > 0 then
    for _, v in ipairs(holders(n)) do
      r[#r + 1] = v
    end
  end
  return r
end
