-- lib.lua: shared prelude of every governor script (prepended by embed.go).
--
-- KEYS, the same in every script, all under one {hash tag} per resource:
--   1 h   zset  lease id -> expiry (ms, server time)
--   2 x   hash  lease id -> "weight token acquired_ms heartbeat_ms ttl_ms declaration"
--   3 q   zset  waiter id -> enqueue sequence (FIFO order)
--   4 qe  zset  waiter id -> queue expiry (ms)
--   5 qd  hash  waiter id -> "weight ttl_ms enqueued_ms channel declaration"
--   6 m   hash  meta: limit, used, token, seq, drift, counters
--   7 e   stream events (capped)
-- Time is the server's (TIME), never the client's. The meta hash is read
-- once (HMGET) and written once (finish), so that an uncontended acquire
-- or release costs a dozen commands whatever the state.

local H, X, Q, QE, QD, M, E = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5], KEYS[6], KEYS[7]

local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local nowus = tonumber(t[1]) * 1000000 + tonumber(t[2])

local function num(v)
  return tonumber(v or '0') or 0
end

local function int(v)
  return string.format('%.0f', v)
end

-- meta: the fields of M this script may change, read once.
local FIELDS = {'limit', 'used', 'token', 'drift', 'acquired', 'released', 'busy', 'waited',
  'reclaimed_expiry', 'reclaimed_dead', 'seq'}
local meta, changed = {}, {}
do
  local v = redis.call('HMGET', M, unpack(FIELDS))
  for i, f in ipairs(FIELDS) do
    meta[f] = num(v[i])
  end
end

local function set(f, v)
  meta[f] = v
  changed[f] = true
end

local function add(f, d)
  set(f, meta[f] + d)
end

-- finish writes the changed meta fields in one command and returns r.
local function finish(r)
  local args = {}
  for f in pairs(changed) do
    args[#args + 1] = f
    args[#args + 1] = int(meta[f])
  end
  if #args > 0 then
    redis.call('HSET', M, unpack(args))
  end
  return r
end

local function event(kind, id, token, detail)
  redis.call('XADD', E, 'MAXLEN', '~', 1000, '*',
    'kind', kind, 'lease', id, 'token', int(token or 0), 'detail', detail or '', 'at', int(now))
end

-- holder record: weight, token, acquired, heartbeat, ttl, declaration
local function holder(id)
  local s = redis.call('HGET', X, id)
  if not s then
    return nil
  end
  local w, tok, acq, hb, ttl, decl = string.match(s, '^(%d+) (%d+) (%d+) (%d+) (%d+) (.*)$')
  return tonumber(w), tonumber(tok), tonumber(acq), tonumber(hb), tonumber(ttl), decl
end

local function set_holder(id, w, tok, acq, hb, ttl, decl)
  redis.call('HSET', X, id, int(w) .. ' ' .. int(tok) .. ' ' .. int(acq) .. ' ' .. int(hb) .. ' ' .. int(ttl) .. ' ' .. decl)
end

-- A fencing token is at least the server time in microseconds, so tokens
-- keep increasing even after a restart that lost every key.
local function next_token()
  set('token', math.max(meta.token + 1, nowus))
  return meta.token
end

local function drop_holder(id, w)
  redis.call('ZREM', H, id)
  redis.call('HDEL', X, id)
  add('used', -w)
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
  set_holder(id, w, tok, now, now, ttl, decl)
  add('used', w)
  add('acquired', 1)
  return tok, exp
end

-- queue_empty is known after promote(): nil until then.
local queue_empty

-- Hand freed weight to the head of the queue, in order, while it fits.
-- The head blocks those behind it even if they are lighter, so a heavy
-- waiter is never starved. Each grantee alone is told, on its own channel.
local function promote()
  while true do
    local head = redis.call('ZRANGE', Q, 0, 0)[1]
    if not head then
      queue_empty = true
      return
    end
    queue_empty = false
    local w, ttl, _, ch, decl = waiter(head)
    if not w then
      drop_waiter(head) -- queue entry without record: unusable
    else
      if meta.used + w > meta.limit then
        return
      end
      drop_waiter(head)
      grant(head, w, ttl, decl)
      redis.call('PUBLISH', ch, head)
    end
  end
end

-- Drop expired holders and waiters, then hand freed weight on. An empty
-- queue (the uncontended case) costs one ZRANGE and no scan of QE.
local function settle()
  local gone = redis.call('ZRANGEBYSCORE', H, '-inf', now)
  for _, id in ipairs(gone) do
    local w, tok = holder(id)
    drop_holder(id, w or 0)
    add('reclaimed_expiry', 1)
    event('expired', id, tok, '')
  end
  if redis.call('ZRANGE', Q, 0, 0)[1] == nil then
    queue_empty = true
    return
  end
  local wgone = redis.call('ZRANGEBYSCORE', QE, '-inf', now)
  for _, id in ipairs(wgone) do
    drop_waiter(id)
  end
  promote()
end

-- Holders for a refusal: id, record, expiry of the first n to expire.
local function holders(n)
  local out = {}
  local ids = redis.call('ZRANGE', H, 0, n - 1, 'WITHSCORES')
  for i = 1, #ids, 2 do
    out[#out + 1] = ids[i]
    out[#out + 1] = redis.call('HGET', X, ids[i]) or ''
    out[#out + 1] = ids[i + 1]
  end
  return out
end

-- Reply of acquire, read by Go's parseReply:
-- {code, token, expiry, position, limit, used, queue length, drift, now, holders...}
-- A grant carries only the first three.
local function reply(code, tok, exp, pos, n)
  if code == 1 then
    return finish({code, int(tok), int(exp)})
  end
  local r = {code, '0', '0', pos or 0, meta.limit, meta.used, redis.call('ZCARD', Q), meta.drift, int(now)}
  if n and n > 0 then
    for _, v in ipairs(holders(n)) do
      r[#r + 1] = v
    end
  end
  return finish(r)
end
