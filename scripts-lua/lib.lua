-- lib.lua: the shared helpers of every governor script that takes the
-- resource KEYS (embed.go puts head.lua first, then the operation's fast
-- path if it has one, then this, then the rest of the operation). The
-- record formats and the fencing-token floor are in head.lua.
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
-- takeovers; inc, the state's incarnation: FLOOR (head.lua) when it was
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
-- only.
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

-- Helpers of the contended paths (something expired, waiters queued, a
-- refusal), built by slow() on first use.
local drop_waiter, promote, prune, holders, event, ended, recount, withdraw, withdrawn

-- The event kinds that end a lease (ended(); governor.EndedKinds in Go)
-- and that withdraw a waiter (withdraw(); governor.WithdrawKinds): a
-- queue policy that drops waiters adds its kind here. The constants
-- copied from Go are pinned by scripts-lua/constants_test.go.
local ENDED = {takeover = true, reclaimed = true, expired = true, cancelled_in_progress = true}
local WITHDRAW_KINDS = {cancelled = true, superseded = true, max_wait = true}
-- The events kept per resource (governor.MaxEvents).
local MAX_EVENTS = 1000

local function slow()
  if promote then
    return
  end

  -- by, when given, names who acted (the admin actions).
  function event(kind, id, token, detail, by)
    if by then
      redis.call('XADD', KEYS[6], 'MAXLEN', '~', MAX_EVENTS, '*',
        'kind', kind, 'lease', id, 'token', token or '0', 'detail', detail or '',
        'at', string.format('%d', now), 'by', by)
      return
    end
    redis.call('XADD', KEYS[6], 'MAXLEN', '~', MAX_EVENTS, '*',
      'kind', kind, 'lease', id, 'token', token or '0', 'detail', detail or '',
      'at', string.format('%d', now))
  end

  -- last_event returns the fields of the last event naming lease id
  -- whose kind is one of kinds, or nothing.
  local function last_event(id, kinds)
    for _, e in ipairs(redis.call('XREVRANGE', KEYS[6], '+', '-', 'COUNT', MAX_EVENTS)) do
      local f, kv = {}, e[2]
      for i = 1, #kv, 2 do
        f[kv[i]] = kv[i + 1]
      end
      if f.lease == id and kinds[f.kind] then
        return f
      end
    end
  end

  -- ended returns the kind, token, detail and time of the last event that
  -- ended lease id (a takeover, a reclaim, its expiry), or nothing: for
  -- the renewal of a lease that is gone, so its holder learns why.
  function ended(id)
    local f = last_event(id, ENDED)
    if f then
      return f.kind, f.token, f.detail, f.at
    end
  end

  -- withdrawn returns the kind, by, detail and time of the event that
  -- withdrew waiter id (withdraw()), or nothing: for a waiter that finds
  -- its queue entry gone, so it learns who and why rather than queue
  -- again.
  function withdrawn(id)
    local f = last_event(id, WITHDRAW_KINDS)
    if f then
      return f.kind, f.by or '', f.detail, f.at
    end
  end

  -- withdraw removes those of ids that are queued, each with an event of
  -- kind (one of WITHDRAW_KINDS) naming by and detail, written before any
  -- other write, and wakes each on its channel; the caller hands the room
  -- on (promote). It returns the ids withdrawn, in queue order.
  function withdraw(ids, kind, by, detail)
    local found = {}
    for _, id in ipairs(ids) do
      local seq = redis.call('ZSCORE', KEYS[3], id)
      if seq then
        found[#found + 1] = {seq + 0, id}
      end
    end
    table.sort(found, function(a, b) return a[1] < b[1] end)
    local out = {}
    for i, f in ipairs(found) do
      event(kind, f[2], 0, detail, by)
      out[i] = f[2]
    end
    for _, id in ipairs(out) do
      local s = redis.call('HGET', KEYS[5], id)
      drop_waiter(id)
      local ch = s and string.match(s, '^%d+ %d+ %d+ (%S+) ')
      if ch then
        redis.call('PUBLISH', ch, id)
      end
    end
    return out
  end

  function drop_waiter(id)
    if policy() then
      pol_unqueue(id)
    end
    local n = redis.call('ZREM', KEYS[3], id)
    redis.call('ZREM', KEYS[4], id)
    redis.call('HDEL', KEYS[5], id)
    if n > 0 then
      add('qlen', -n)
    end
    return n
  end

  -- Hand freed weight to the head of the queue, in order, while it fits.
  -- The head blocks those behind it even if they are lighter, so a heavy
  -- waiter is never starved. Each grantee alone is told (tell()), on its own
  -- channel. A full resource stops the loop before the queue is read
  -- (every weight is at least 1), so a release costs the same whatever
  -- the queue length.
  function promote()
    if policy() then
      return pol_promote()
    end
    local limit = get('limit')
    while get('qlen') > 0 and get('used') < limit and not held_back() do
      local head = redis.call('ZRANGE', KEYS[3], 0, 0)[1]
      if not head then
        set('qlen', 0) -- qlen was wrong: trust the queue
        return
      end
      local s = redis.call('HGET', KEYS[5], head)
      local w, ttl, _, ch, decl
      if s then
        w, ttl, _, ch, decl = string.match(s, WREC_ALL)
      end
      if not w then
        -- A queue entry without a readable record cannot be served: it
        -- goes, said in an event, and the queue moves on.
        drop_waiter(head)
        event('dropped', head, 0, string.format('queue entry without a readable record: %q', s or '(none)'))
      else
        w = weight_of(w)
        if m.used + w > limit then
          return
        end
        drop_waiter(head)
        local tok, exp = grant(head, w, ttl + 0, decl)
        tell(ch, head, tok, exp, limit)
      end
    end
  end

  -- Drop expired holders (once minexp has passed) and waiters (when some
  -- are queued), then hand freed weight on. A script that fails half way
  -- keeps the writes it made, so the events (the one write that a foreign
  -- value at its key can make fail here) go first, before any other.
  function prune()
    if now >= get('minexp') then
      local gone = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', now)
      if #gone > 0 then
        local unknown = false
        for _, id in ipairs(gone) do
          local r = record(id)
          local w, _, tok
          if r then
            w, _, tok = string.match(r, REC_NUMS)
          end
          event('expired', id, tok, '')
          if r then
            hold(r)
          end
          set('#' .. id, false)
          add('used', -(w or 0))
          if w and policy() then
            pol_unheld(id, w + 0)
          end
          add('reclaimed_expiry', 1)
          unknown = unknown or not w
        end
        redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
        if unknown then
          -- What it weighed is unknown: count the holders left.
          recount(string.format('%d after dropping an expired holder without a readable record', m.used), false)
        end
      end
      local first = redis.call('ZRANGE', KEYS[1], 0, 0, 'WITHSCORES')[2]
      set('minexp', (first or NONE) + 0)
    end
    if get('qlen') > 0 then
      for _, id in ipairs(redis.call('ZRANGEBYSCORE', KEYS[4], '-inf', now)) do
        drop_waiter(id)
      end
      promote()
    end
  end

  -- Holders for a refusal: id, record, expiry of the first n to expire.
  -- Call after flush, so that S holds every record.
  function holders(n)
    local out = {}
    local ids = redis.call('ZRANGE', KEYS[1], 0, n - 1, 'WITHSCORES')
    if #ids == 0 then
      return out
    end
    local ks = {}
    for i = 1, #ids, 2 do
      ks[#ks + 1] = '#' .. ids[i]
    end
    local rs = redis.call('HMGET', KEYS[2], unpack(ks))
    for i = 1, #ids, 2 do
      out[#out + 1] = ids[i]
      out[#out + 1] = rs[(i + 1) / 2] or ''
      out[#out + 1] = ids[i + 1]
    end
    return out
  end
end

-- adaptive sets the limit in force to the one AIMD holds (adapt,
-- adapt.lua) when the resource is adaptive under the maximum asked, and
-- tells whether it did: a process asking for that maximum then agrees
-- with the limit in force (no drift). A process asking for another
-- maximum leaves it to in_force's rules (adapt.lua starts over on it).
local function adaptive(asked)
  local a = get('adapt') or 0
  if a <= 0 or get('adapt_max') ~= asked then
    return false
  end
  if m.limit ~= a then
    set('limit', a)
  end
  if m.drift ~= 0 then
    set('drift', 0)
  end
  return true
end

-- in_force sets the limit in force for a process asking for limit asked
-- (its waiter or lease id) on a resource idle or not: the one place that
-- decides it. A limit set live (admin.lua) wins, then the one AIMD
-- holds (adaptive()); otherwise the limit changes only when the resource
-- is idle. A process asking for another limit than the one in force is
-- recorded as drift, once per new disagreement.
local function in_force(asked, id, idle)
  local live = get('live') or 0
  if live == 0 and adaptive(asked) then
    return
  end
  if live > 0 or (m.limit ~= asked and m.limit ~= 0 and not idle) then
    if m.limit ~= asked and m.drift ~= asked then
      slow()
      event('drift', id, 0, string.format('a process asked for limit %d; the limit in force is %d%s', asked, m.limit,
        live > 0 and ' (set live)' or ''))
      set('drift', asked)
    end
  else
    if m.limit ~= asked then
      set('limit', asked)
    end
    if m.drift ~= 0 and idle then
      set('drift', 0)
    end
  end
end

-- Lost data. Redis restarted without persistence, or a failover to a
-- replica behind, forgets holders that still run: their next renewal
-- tells them (up to a heartbeat later), but meanwhile a waiter could be
-- granted beside them. Only evidence that state existed and is gone
-- counts, so that a resource never used before is never held back: a
-- holder renewing a lease its backend was granted, or a waiter that its
-- backend saw queued re-queuing, finds the resource without any state
-- (Redis's forget needs it idle: no holder, no waiter), or the stored
-- weight held has to be counted down because holders vanished. Then new grants wait for loss_ms, the
-- longest lease TTL the detecting process knows on the resource: by then
-- every holder of the lost state has renewed, and learnt, or expired.
-- Tokens keep increasing (FLOOR). The rule and what it cannot see are in
-- the README ("Redis lost its data").
local function quarantine(why)
  if loss_ms <= 0 then
    return
  end
  local until_ = now + loss_ms
  if until_ > (get('quarantine') or 0) then
    set('quarantine', until_)
    slow()
    event('quarantine', '', 0, string.format('%s: the data of this resource was lost; no new grant for %d ms',
      why, loss_ms))
  end
end

-- A machine's witness (Go's witness.go): w is the incarnation of the
-- state a process of the caller's machine saw last, sent with each new
-- request, so that a process that never saw the resource itself (a new
-- CLI run, a new client) still has the evidence. A state missing, or of
-- another incarnation, means the state w was lost (a restart without
-- persistence, a flush, a failover to an empty replica, an eviction),
-- unless every state born up to known (µs) was accounted for: forgotten
-- (forget.lua leaves known as a tombstone) or found lost already (here).
local function witnessed(id, w)
  local inc = get('inc')
  if inc == w or w <= get('known') then
    return
  end
  quarantine(string.format('new request %s from a machine that saw this state born at %d us found %s', id, w,
    inc == 0 and 'none' or string.format('one born at %d us', inc)))
  set('known', FLOOR)
end

-- born marks the state born now (its incarnation, inc). On a forgotten
-- resource's tombstone (forget.lua), which expires, the state is written
-- anew without the expiry, keeping what the tombstone held (known).
local function born()
  if get('known') > 0 then
    local all = redis.call('HGETALL', KEYS[2])
    redis.call('DEL', KEYS[2])
    for i = 1, #all, 2 do
      if m[all[i]] == nil then
        m[all[i]] = all[i + 1]
      end
      d[all[i]] = true
    end
  end
  set('inc', FLOOR)
end

-- recount sets used to the weight of the holders in H, which with their
-- records are the truth, and records the repair as an event; when the
-- count goes down and vanished is set (holders went missing, rather than
-- expired), grants are held back as after lost data. A live holder
-- without a readable record has no known weight: no grant can be safe
-- beside it, so the script stops with an error until it expires (nobody
-- can renew it: renew needs the record).
function recount(why, vanished)
  local ids = redis.call('ZRANGE', KEYS[1], 0, -1, 'WITHSCORES')
  local sum = 0
  for i = 1, #ids, 2 do
    local r = record(ids[i])
    local w = r and string.match(r, REC_NUMS)
    if w then
      sum = sum + w
    elseif ids[i + 1] + 0 > now then
      contradiction(KEYS[1], 'holder %s (expiry %s) has no readable record in %s; no grant until it expires',
        ids[i], ids[i + 1], KEYS[2])
    end
  end
  if sum == get('used') and not (bad and bad.used) then
    return -- holders beyond the limit, say: nothing to repair
  end
  slow()
  event('repaired', '', 0, string.format('used was %s; the %d holders weigh %d', why, #ids / 2, sum))
  if vanished and sum < get('used') then
    quarantine('holders vanished')
  end
  set('used', sum)
end

-- verify checks the counts load() read against the keys that hold the
-- truth, and repairs them: a stored used (the sum of the holders'
-- weights) below zero, below the number of holders (each weighs at least
-- 1), above the limit, left over with no holder, or unreadable, is
-- recounted from H; a qlen below zero or unreadable, from Q. One ZCARD
-- when all is well, and only off the fast paths: theirs check used >= 0,
-- and a fast renewal that finds its lease missing from H (a record left
-- without its holder entry) comes here.
local function verify()
  local n, used = redis.call('ZCARD', KEYS[1]), get('used')
  if bad and bad.qlen or get('qlen') < 0 then
    set('qlen', redis.call('ZCARD', KEYS[3]))
  end
  if bad and bad.used then
    recount(string.format('%q', bad.used), false)
  elseif used < n or used < 0 or (n == 0 and used ~= 0) or (used > get('limit') and n > 0) then
    recount(string.format('%d', used), true)
  end
end

-- settle prunes and hands on only when something may have expired or
-- waiters are queued: an uncontended call asks Redis nothing for it.
local function settle()
  verify()
  if now >= get('minexp') or get('qlen') > 0 then
    slow()
    prune()
  end
end

-- Queue policies (issue 15). The rules are governor.Policy's (policy.go);
-- the file backend's twin is filebackend/policy.go. A policy is stored in
-- S as 'policy' (governor.Policy.Encode), set while the resource is idle;
-- with none, nothing below runs and the queue is strict FIFO. With one:
--   Q's score is (class - 1) * BAND + tag: classes are bands, highest
--   first, and within a band the smallest start-time-fair-queueing tag,
--   max(class virtual time, key's last tag) + QUANT / key weight, is
--   the next fair waiter: one ZRANGEBYSCORE finds a class's head.
--   S fields: cuN weight held by class N, qnN waiters queued in class N,
--   skN grants to higher classes while N waited (anti-starvation), vtN
--   class N's virtual time, 'ku:' .. key weight held by fair key key,
--   '@' .. lease id its holder's "class key", ep (policy eager) "head
--   passes": how often the blocked head was passed.
--   QD fields: '^' .. waiter id "class tag enqueued_ms key", and
--   '~' .. class .. ':' .. key the key's last tag (QD is deleted when an
--   enqueue finds the queue empty, so these last no longer than that).
-- Costs per grant: 1 ZRANGEBYSCORE and 1 HMGET per class looked at (the
-- classes with waiters, at most governor.MaxClasses, usually the first),
-- and with fair_cap up to governor.PolicySkip HMGETs more in a class
-- whose head's key is at its cap: bounded, whatever the number of
-- waiters and keys.
local BAND, QUANT, SKIP = 562949953421312, 720720, 8 -- QUANT, SKIP: governor.PolicyQuant, governor.PolicySkip
local EAGER, OVERTAKES = 8, 10 -- governor.EagerPasses, governor.DefaultMaxOvertakes
local pol_read = {} -- waiter id -> {its '^' field, its record}, as pol_head read them
local pol_class, pol_allows, pol_enqueue, pol_attrs, pol_reserved, pol_never, pol_eager

function policy()
  if P ~= nil then
    return P
  end
  local s = m.policy
  if s == nil then
    s = redis.call('HGET', KEYS[2], 'policy') or false
    m.policy = s
  end
  if not s or s == '' then
    P = false
    return P
  end
  P = {c = {}, fw = {}}
  for name, r, cp in string.gmatch(string.match(s, '^c=([^;]*)') or '', '([^:,]+):(%d+):(%d+)') do
    P.c[#P.c + 1] = {name = name, r = r + 0, cap = cp + 0}
  end
  if #P.c == 0 then
    P.c[1] = {name = '', r = 0, cap = 0}
  end
  P.k = (string.match(s, ';k=(%d+)') or OVERTAKES) + 0
  P.fair = string.find(s, ';fair=1;', 1, true) ~= nil
  P.fc = (string.match(s, ';fc=(%d+)') or 0) + 0
  P.eager = string.find(s, ';e=1;', 1, true) ~= nil
  P.mq = (string.match(s, ';mq=(%d+)') or 0) + 0
  P.mw = (string.match(s, ';mw=(%d+)') or 0) + 0
  for key, w in string.gmatch(string.match(s, ';fw=([^;]*)') or '', '([^:,]+):(%d+)') do
    P.fw[key] = w + 0
  end
  -- The per-class counts, in one HMGET.
  local fs = {}
  for i = 1, #P.c do
    for _, f in ipairs({'cu', 'qn', 'sk', 'vt'}) do
      if m[f .. i] == nil then
        fs[#fs + 1] = f .. i
      end
    end
  end
  if #fs > 0 then
    local v = redis.call('HMGET', KEYS[2], unpack(fs))
    for i = 1, #fs do
      m[fs[i]] = num(fs[i], v[i])
    end
  end
  slow()

  -- kget/kadd: a fair key's weight held ('ku:' .. key), the field gone
  -- at 0.
  local function kget(key)
    local f = 'ku:' .. key
    local v = m[f]
    if v == nil then
      v = num(f, redis.call('HGET', KEYS[2], f))
      m[f] = v
    end
    return v or 0
  end
  local function kadd(key, n)
    local v = kget(key) + n
    set('ku:' .. key, v > 0 and v or false)
  end

  -- pol_class: the class index of a waiter naming class name
  -- (governor.Policy.ClassIndex; a name the policy in force lacks, under
  -- drift, is taken as no name).
  function pol_class(name)
    local want = name ~= '' and name or 'default'
    for i = 1, #P.c do
      if P.c[i].name == want then
        return i
      end
    end
    if name == '' then
      return #P.c
    end
    return pol_class('')
  end

  -- pol_attrs: holder id's "class key", or false.
  function pol_attrs(id)
    local k = '@' .. id
    local r = m[k]
    if r == nil then
      r = redis.call('HGET', KEYS[2], k) or false
      m[k] = r
    end
    return r
  end

  -- pol_reserved: the slots the classes above class i reserve and do not
  -- use.
  function pol_reserved(i)
    local n = 0
    for j = 1, i - 1 do
      n = n + math.max(0, P.c[j].r - get('cu' .. j))
    end
    return n
  end

  -- pol_allows: may class i, key, weight w be granted now, by the cap,
  -- fair cap, reserve and limit? The second value tells whether a refusal
  -- blocks the classes below too (reserve and limit do; caps do not).
  function pol_allows(i, key, w)
    local cp = P.c[i].cap
    if cp > 0 and get('cu' .. i) + w > cp then
      return false, false
    end
    if P.fc > 0 and key ~= '' and kget(key) + w > P.fc then
      return false, false
    end
    local free = get('limit') - get('used')
    if w > free then
      return false, 'fit'
    end
    if free - w < pol_reserved(i) then
      return false, 'reserve'
    end
    return true
  end

  -- pol_never: can class i, key, weight w never be granted (its cap, the
  -- reserves above it, the fair cap)?
  function pol_never(i, key, w)
    local r = 0
    for j = 1, i - 1 do
      r = r + P.c[j].r
    end
    return (P.c[i].cap > 0 and w > P.c[i].cap) or w > get('limit') - r or (P.fc > 0 and key ~= '' and w > P.fc)
  end

  -- pol_enqueue queues waiter id (record rec) in class i under key.
  function pol_enqueue(id, i, key, rec)
    if get('qlen') <= 0 then
      redis.call('DEL', KEYS[5]) -- no waiter: the tags start again
      for j = 1, #P.c do
        if get('vt' .. j) ~= 0 then
          set('vt' .. j, 0)
        end
      end
    end
    local tk = P.fair and key or '' -- without fairness, one FIFO per class
    local kf = '~' .. i .. ':' .. tk
    local tag = math.max(get('vt' .. i), (redis.call('HGET', KEYS[5], kf) or 0) + 0)
      + math.floor(QUANT / (P.fw[tk] or 1))
    local ts = string.format('%d', tag)
    redis.call('ZADD', KEYS[3], string.format('%d', (i - 1) * BAND + tag), id)
    redis.call('HSET', KEYS[5], id, rec, '^' .. id, string.format('%d %s %d %s', i, ts, now, key), kf, ts)
    add('qn' .. i, 1)
    add('qlen', 1)
  end

  -- pol_unqueue: waiter id leaves the queue (drop_waiter calls it
  -- first): its class counts one less; dropped because max_wait passed,
  -- it is told, by a withdrawn event and on its channel.
  function pol_unqueue(id)
    local v = pol_read[id] or redis.call('HMGET', KEYS[5], '^' .. id, id)
    local i, _, enq = string.match(v[1] or '', '^(%d+) (%d+) (%d+) ')
    if not i then
      return
    end
    set('qn' .. i, math.max(0, get('qn' .. i) - 1))
    redis.call('HDEL', KEYS[5], '^' .. id)
    if P.mw > 0 and now >= enq + P.mw and not pol_as then
      event('max_wait', id, 0, string.format('queued for %d ms; the resource allows %d ms (max_wait)', now - enq, P.mw), 'policy')
      local ch = v[2] and select(4, string.match(v[2], WREC_ALL))
      if ch then
        redis.call('PUBLISH', ch, id)
      end
    end
  end

  -- pol_held: grant() made id a holder for pol_as = {class, key, moved}:
  -- the class and key hold w more, and (unless moved: a takeover) the
  -- classes below that wait count one grant more (anti-starvation).
  function pol_held(id, w)
    local i, key, moved = pol_as[1], pol_as[2], pol_as[3]
    pol_as = nil
    add('cu' .. i, w)
    if key ~= '' then
      kadd(key, w)
    end
    set('@' .. id, string.format('%d %s', i, key))
    if moved then
      return -- a takeover: the lease moved, nobody was granted
    end
    if get('sk' .. i) ~= 0 then
      set('sk' .. i, 0)
    end
    for j = i + 1, #P.c do
      if get('qn' .. j) > 0 then
        add('sk' .. j, 1)
      elseif get('sk' .. j) ~= 0 then
        set('sk' .. j, 0)
      end
    end
  end

  -- pol_unheld: holder id, of weight w, is gone.
  function pol_unheld(id, w)
    local a = pol_attrs(id)
    local i, key = string.match(a or '', '^(%d+) (.*)$')
    if not i then
      return
    end
    set('cu' .. i, math.max(0, get('cu' .. i) - w))
    if key ~= '' then
      kadd(key, -w)
    end
    set('@' .. id, false)
  end

  -- pol_head: the first waiter of class i that the fair cap lets
  -- through (looking at most SKIP deep), as id, weight, ttl, channel,
  -- declaration, key, tag; 'again' after dropping an unreadable entry;
  -- nil when there is none.
  local function pol_head(i)
    local ids = redis.call('ZRANGEBYSCORE', KEYS[3], (i - 1) * BAND, '(' .. string.format('%d', i * BAND),
      'LIMIT', 0, P.fc > 0 and SKIP or 1)
    if #ids == 0 then
      set('qn' .. i, 0) -- the count was wrong: trust the queue
      return nil
    end
    for _, id in ipairs(ids) do
      local v = redis.call('HMGET', KEYS[5], id, '^' .. id)
      pol_read[id] = {v[2], v[1]}
      local w, ttl, _, ch, decl = string.match(v[1] or '', WREC_ALL)
      local _, tag, _, key = string.match(v[2] or '', '^(%d+) (%d+) (%d+) (.*)$')
      if not w or not tag then
        drop_waiter(id)
        event('dropped', id, 0, string.format('queue entry without a readable record: %q %q', v[1] or '(none)', v[2] or '(none)'))
        return 'again'
      end
      if P.fc == 0 or key == '' or kget(key) + weight_of(w) <= P.fc then
        return id, weight_of(w), ttl + 0, ch, decl, key, tag + 0
      end
    end
  end

  -- pol_eager (policy eager): head, at the head of class i, does not fit
  -- in the free slots; a later waiter of its class that the policy
  -- allows now (looking at most SKIP deep) is granted instead, unless
  -- head was passed governor.EagerPasses (8) times already. S field
  -- 'ep' is "head passes". Returns what pol_head does, or nil.
  function pol_eager(i, head)
    local ep = m.ep
    if ep == nil then
      ep = redis.call('HGET', KEYS[2], 'ep') or false
      m.ep = ep
    end
    local was, n = string.match(ep or '', '^(%S+) (%d+)$')
    n = was == head and n + 0 or 0
    if n >= EAGER then
      return nil
    end
    local ids = redis.call('ZRANGEBYSCORE', KEYS[3], (i - 1) * BAND, '(' .. string.format('%d', i * BAND),
      'LIMIT', 1, SKIP)
    for _, id in ipairs(ids) do
      local v = redis.call('HMGET', KEYS[5], id, '^' .. id)
      pol_read[id] = {v[2], v[1]}
      local w, ttl, _, ch, decl = string.match(v[1] or '', WREC_ALL)
      local _, tag, _, key = string.match(v[2] or '', '^(%d+) (%d+) (%d+) (.*)$')
      if w and tag and pol_allows(i, key, weight_of(w)) then
        set('ep', string.format('%s %d', head, n + 1))
        return id, weight_of(w), ttl + 0, ch, decl, key, tag + 0
      end
    end
  end

  -- pol_promote: promote() under a policy. The starving class (the
  -- highest whose overtakes reached k) is looked at first, then every
  -- class from the highest; the first head allowed is granted; a head
  -- that the limit or a reserve stops stops everything below it (the
  -- starving head: only the limit).
  function pol_promote()
    local limit = get('limit')
    while get('qlen') > 0 and get('used') < limit and not held_back() do
      local first
      for i = 2, #P.c do
        if get('qn' .. i) > 0 and get('sk' .. i) >= P.k then
          first = i
          break
        end
      end
      local id, w, ttl, ch, decl, key, tag, cls
      for n = 0, #P.c do
        local i = n == 0 and first or n
        if i and (n == 0 or i ~= first) and get('qn' .. i) > 0 then
          id, w, ttl, ch, decl, key, tag = pol_head(i)
          if id == 'again' then
            break
          end
          if id then
            local ok, stops = pol_allows(i, key, w)
            if ok then
              cls = i
              break
            end
            if stops == 'fit' and P.eager then
              id, w, ttl, ch, decl, key, tag = pol_eager(i, id)
              if id then
                cls = i
                break
              end
            end
            id = nil
            -- A head the free slots or a reserve stop stops the classes
            -- below; the starving class's head, only when the free slots
            -- stop it (a reserve is not its to wait for).
            if stops == 'fit' or stops and n > 0 then
              return
            end
          end
        end
      end
      if id ~= 'again' then
        if not id then
          return
        end
        pol_as = {cls, key}
        drop_waiter(id)
        local tok, exp = grant(id, w, ttl, decl)
        if tag > get('vt' .. cls) then
          set('vt' .. cls, tag)
        end
        tell(ch, id, tok, exp, limit)
      end
    end
  end
  return P
end

-- Supersede (issue 15; governor.AcquireOptions.Supersede): S field
-- '%w' .. key names the last waiter queued with supersede key key, and
-- '%h' .. key the last holder granted with it. supersede(id, key,
-- cancel) is called for a new request with key: the older waiter with
-- key leaves the queue, told by a withdrawn event ("superseded: ...")
-- and on its channel; with cancel (cancel-in-progress), the holder with
-- key is marked cancelled (cancel_holder()).
-- cancel_holder marks holder h cancelled (CIP above), with the
-- cancelled_in_progress event naming by and detail; a lease marked
-- already, or gone, is left as it is.
local function cancel_holder(h, detail, by)
  local r = record(h)
  if not r or cancelled(r) then
    return
  end
  local _, _, tok = parse_rec(h, r)
  event('cancelled_in_progress', h, tok, detail, by)
  local mark = CIP .. string.format('%d', now)
  if string.sub(r, -2) == '{}' then
    set('#' .. h, string.sub(r, 1, -2) .. mark .. '}')
  else
    set('#' .. h, string.sub(r, 1, -2) .. ',' .. mark .. '}')
  end
end

-- who returns the user and session a declaration (JSON) names, '' for
-- what it does not.
local function who(decl)
  local ok, d = pcall(cjson.decode, decl or '')
  if not ok or type(d) ~= 'table' then
    return '', ''
  end
  return type(d.user) == 'string' and d.user or '', type(d.session) == 'string' and d.session or ''
end

-- supersede(id, key, cancel, others, decl): decl is id's declaration;
-- without others, a holder of another OS user (its declaration's user)
-- is not cancelled: supersede then changes nothing and returns that
-- holder and its user.
local function supersede(id, key, cancel, others, decl)
  slow()
  local h, user, session
  if cancel then
    h = redis.call('HGET', KEYS[2], '%h' .. key)
    local r = h and h ~= id and record(h)
    if not r then
      h = nil
    else
      user, session = who(decl)
      local theirs = who(string.match(r, '^%d+ %d+ %d+ %d+ (.*)$'))
      if not others and not cancelled(r) and theirs ~= user then
        return h, theirs
      end
    end
  end
  local old = redis.call('HGET', KEYS[2], '%w' .. key)
  if old and old ~= id then
    pol_as = {} -- not a max_wait drop
    withdraw({old}, 'superseded', id, string.format('a newer waiter with supersede key %s replaced it', key))
    pol_as = nil
  end
  if h then
    cancel_holder(h, string.format('cancelled in progress by %s (user %s, session %s) with supersede key %s', id, user,
      session, key), id)
  end
end

-- superseding records id as the waiter (as 'w') or holder ('h') with
-- supersede key key.
local function superseding(id, key, as)
  set('%' .. as .. key, id)
end
