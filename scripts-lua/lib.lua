-- lib.lua: the shared helpers of every governor script that takes the
-- resource KEYS (embed.go puts head.lua first, then the operation's fast
-- path if it has one, then this prelude, then the rest of the operation).
-- The prelude is this file, then lib-slow.lua, lib-loss.lua,
-- lib-policy.lua and lib-supersede.lua, in that order (embed.go's
-- libFiles). The record formats and the fencing-token floor are in head.lua.
--
-- KEYS, the same in every script, all under one {hash tag} per resource
-- (names as Go's Keys builds them; none is shared with the older layout
-- of separate meta and holder hashes, whose state this one cannot read):
--   1 H  holders    zset   lease id -> expiry (ms, server time)
--   2 S  state      hash   the meta fields below, and each holder's record
--                          under '#' .. lease id (REC in head.lua)
--   3 Q  queue      zset   waiter id -> enqueue sequence (FIFO order)
--   4 QE queue-exp  zset   waiter id -> queue expiry (ms)
--   5 QD queue-rec  hash   waiter id -> its record (WREC in head.lua)
--   6 E  events     stream events (capped)
-- Meta fields of S: limit, used (weight held), token (last fencing
-- token), drift, seq (last enqueue sequence), qlen (= ZCARD Q), minexp
-- (no holder in H expires before it), and the counters acquired,
-- released, busy, waited, reclaimed_expiry, reclaimed_dead, lost,
-- takeovers, local_grants (capacity.lua); inc, the state's incarnation: FLOOR (head.lua) when it was
-- born (the first acquire or live limit on a resource without state), so
-- that a lease whose token, or a waiter whose queued time, predates it
-- outlived the state it was granted or queued in (quarantine()), as does
-- a state a machine witnessed (witnessed()); known (µs): every state born
-- up to it is accounted for (forgotten, or its loss found), so a witness
-- of it is no evidence; idle is
-- forget.lua's mark; quarantine (ms) holds new grants
-- back after a loss of data was detected, and cooloff (ms) until the end
-- of a provider's cool-off (cooloff.lua; rate.lua reads it too) (both:
-- held_back() below).
-- Admin state (admin.lua): paused (ms since; absent when not) and
-- paused_by; live (a limit set live; absent when none), live_at (ms) and
-- live_by. holdn and hold:I: the last hold durations (HOLDS in
-- head.lua; hold()). Queue policies (issue 15): policy (the one in
-- force), pdrift (one asked for that differs), the per-class and per-key
-- counts, holders' '@' fields and supersede's '%w'/'%h' fields: see
-- "Queue policies" and "Supersede" at the end of this file.
-- Adaptive concurrency (adapt.lua): adapt (the limit AIMD holds), adapt_max
-- (the configured maximum it runs under), adapt_ok (successes since the
-- last change); signal_at (ms): the last rate-limit signal (cooloff.lua);
-- cooloff (ms): the end of a cool-off (cooling()). A seventh
-- key, the stats hash (observe.lua), goes to status.lua and forget.lua
-- only, and an eighth, the capacity hash, to them and capacity.lua (its
-- seventh).
--
-- Time is the server's (TIME), never the client's.
--
-- Cost. Each redis.call costs several times the command it runs, so a
-- script reads what it needs of S in one HMGET (other fields only on the
-- paths that need them) and writes S once, at finish; qlen and minexp let
-- an uncontended call skip the queue and the expiry scan without asking
-- Redis. An uncontended acquire is TIME, HMGET, ZADD, HSET; a release
-- TIME, HMGET, ZREM, HSET, HDEL; a renewal TIME, HMGET, ZADD. The Lua
-- around the calls counts too, and is run on every call: every closure
-- and table a script builds is allocated and later collected, so the
-- uncontended paths of acquire, release and renew are written straight,
-- before these helpers, and return before any is built (measured with
-- callgrind: the helpers alone cost a script more than its four Redis
-- calls). Of the helpers, those of the contended paths are built only
-- when a script needs them (slow()); arithmetic converts a numeric string
-- at half the cost of tonumber.

-- m caches S: meta fields (numbers) and holder records ('#' .. id ->
-- record, or false when absent); d marks what finish writes.
local m, d = {}, {}

-- loss_ms: how long new grants are held back after this script detects
-- that the resource's data was lost (0: not at all); the operation sets
-- it from its ARGV.
local loss_ms = 0

-- bad holds the meta fields that held no whole number (field -> what was
-- there), for verify() to recompute; see num().
local bad

-- contradiction stops the script with an error naming the key and what
-- contradicts what (Go's wrap() makes it governor.ErrBackend). It is
-- raised before any write.
local function contradiction(key, fmt, ...)
  error(string.format('governor: %s: ' .. fmt .. ': the state contradicts itself', key, ...), 0)
end

-- num reads meta field f, raw value x: 0 when absent. A value that is not
-- a whole number is either recomputed from the keys that hold the truth
-- (used from H and the records, qlen from Q, minexp from H: verify() and
-- prune()) or refused.
local function num(f, x)
  if not x then
    return 0
  end
  local n = tonumber(x)
  if n and n == math.floor(n) then
    return n
  end
  if f == 'used' or f == 'qlen' or f == 'minexp' or f == 'quarantine' or f == 'paused' or f == 'live'
      or f == 'cooloff' then
    bad = bad or {}
    bad[f] = x
    return 0
  end
  contradiction(KEYS[2], 'field %s holds %q, not a whole number', f, x)
end

-- load reads the meta fields a script needs and, if id is given, holder
-- id's record, in one HMGET; or takes v, the reply of the same HMGET that
-- a fast path already made.
local function load(fields, id, v)
  local n = #fields
  if id then
    fields[n + 1] = '#' .. id
  end
  v = v or redis.call('HMGET', KEYS[2], unpack(fields))
  for i = 1, n do
    if fields[i] == 'policy' or fields[i] == 'pdrift' then
      m[fields[i]] = v[i] or false -- strings (see policy())
    else
      m[fields[i]] = num(fields[i], v[i])
    end
  end
  if id then
    m[fields[n + 1]] = v[n + 1]
  end
end

-- get returns a meta field, reading it if no load did.
local function get(f)
  local v = m[f]
  if v == nil then
    v = num(f, redis.call('HGET', KEYS[2], f))
    m[f] = v
  end
  return v
end

local function set(f, v)
  m[f] = v
  d[f] = true
end

local function add(f, n)
  set(f, get(f) + n)
end

-- record returns holder id's record, or false.
local function record(id)
  local k = '#' .. id
  local r = m[k]
  if r == nil then
    r = redis.call('HGET', KEYS[2], k)
    m[k] = r
  end
  return r
end

-- parse_rec returns the weight, ttl and token of holder id's record r, as
-- strings; a record that does not read is refused.
local function parse_rec(id, r)
  local w, ttl, tok = string.match(r, REC_NUMS)
  if not w then
    contradiction(KEYS[2], 'the record of lease %s is %q, not "weight ttl token acquired declaration"', id, r)
  end
  return w, ttl, tok
end

-- flush writes what changed in S. Numbers go as strings: %d formats them
-- for less than Redis's own conversion.
local function flush()
  local hset, hdel = {}, nil
  for k in pairs(d) do
    local v = m[k]
    if v then
      hset[#hset + 1] = k
      hset[#hset + 1] = type(v) == 'number' and string.format('%d', v) or v
    else
      hdel = hdel or {}
      hdel[#hdel + 1] = k
    end
  end
  -- Lua's unpack is bounded: write in slices.
  for i = 1, #hset, 1000 do
    redis.call('HSET', KEYS[2], unpack(hset, i, math.min(i + 999, #hset)))
  end
  for i = 1, hdel and #hdel or 0, 1000 do
    redis.call('HDEL', KEYS[2], unpack(hdel, i, math.min(i + 999, #hdel)))
  end
end

-- finish writes S and returns r.
local function finish(r)
  flush()
  return r
end

-- A new expiry lowers minexp if it is earlier.
local function expires(exp)
  if exp < get('minexp') then
    set('minexp', exp)
  end
end

-- cooling tells whether the resource is cooling off after a provider's
-- rate-limit signal (cooloff.lua); once the time has passed, the mark
-- goes.
local function cooling()
  local c = get('cooloff')
  if not c or c == 0 then
    return false
  end
  if now < c then
    return true
  end
  set('cooloff', false)
  return false
end

-- held_back tells whether new grants wait: the resource is paused
-- (admin.lua), cooling off (cooling()), or in quarantine; once the
-- quarantine's time has passed, its mark goes.
local function held_back()
  if (get('paused') or 0) > 0 or cooling() then
    return true
  end
  local q = get('quarantine')
  if not q or q == 0 then
    return false
  end
  if now < q then
    return true
  end
  set('quarantine', false)
  return false
end

-- Queue policies (issue 15): see the section "Queue policies" below.
-- policy() is the policy in force, parsed, or false (strict FIFO); the
-- helpers are built by polfns() on first use.
local P, pol_as
local policy, pol_held, pol_unheld, pol_unqueue, pol_promote

-- A grantee of promote() is told on its channel (PUBLISH), or, when that
-- is own_ch (release.lua's caller's own channel: a waiter of the
-- releasing process), in the release's reply: handed lists those grants,
-- four values each (id, token, expiry ms, limit in force), which the
-- waiter takes without a round trip of its own (redisbackend's hand).
local handed, own_ch = {}, nil
local function tell(ch, id, tok, exp, limit)
  if ch ~= own_ch then
    redis.call('PUBLISH', ch, id)
    return
  end
  local n = #handed
  handed[n + 1], handed[n + 2], handed[n + 3], handed[n + 4] = id, tok, exp, limit
end

-- grant makes id a holder, with a new fencing token.
local function grant(id, w, ttl, decl)
  local tok = math.max(get('token') + 1, FLOOR)
  local exp = now + ttl
  set('token', tok)
  redis.call('ZADD', KEYS[1], string.format('%d', exp), id)
  set('#' .. id, string.format(REC, w, ttl, tok, now) .. decl)
  expires(exp)
  add('used', w)
  add('acquired', 1)
  if pol_as then
    pol_held(id, w)
  end
  return tok, exp
end

local function drop_holder(id, w)
  redis.call('ZREM', KEYS[1], id)
  set('#' .. id, false)
  add('used', -w)
  if policy() then
    pol_unheld(id, w)
  end
end

-- hold records how long the lease of record r was held (now minus its
-- grant) in the ring of the last HOLDS (head.lua): for releases,
-- expiries, reclaims and takeovers. A holdn that is not a number counts
-- from 0.
local function hold(r)
  local acq = string.match(r, REC_ACQ)
  if not acq then
    return
  end
  local n = m.holdn
  if n == nil then
    n = redis.call('HGET', KEYS[2], 'holdn')
  end
  n = tonumber(n or 0) or 0
  n = n - n % 1
  set('hold:' .. string.format('%d', n % HOLDS), math.max(0, now - acq))
  set('holdn', n + 1)
end

-- Cancel in progress (issue 15). A cancelled lease keeps its weight, so
-- that its work never runs beside its successor's: its record gets the
-- mark CIP ('"cip":' and the time, ms, in its declaration), which every
-- renewal and progress mark refuses (renew.lua's fast path checks it in
-- the record it reads anyway; a batched renewal runs renew.lua whole),
-- with the cancelled_in_progress event; its holder stops the work and
-- releases, which hands the weight on as any release does; a holder that
-- died is reclaimed or expires. Nothing brings the lease back.
local CIP = '"cip":'

-- cancelled tells whether record r is marked cancelled.
local function cancelled(r)
  return string.find(r, CIP, 1, true) ~= nil
end

-- weight_of is the weight a waiter's record says, w (a string): the
-- limit in force for an exclusive waiter (0; head.lua's WREC), resolved
-- when it is granted.
local function weight_of(w)
  w = w + 0
  if w == 0 then
    return get('limit')
  end
  return w
end
