-- lib-slow.lua: the prelude's second part (after lib.lua): the contended
-- paths, built by slow() on first use, the adaptive limit and the limit in
-- force.

-- Helpers of the contended paths (something expired, waiters queued, a
-- refusal), built by slow() on first use.
local drop_waiter, promote, prune, holders, event, ended, recount, withdraw, withdrawn

-- The event kinds that end a lease (ended(); backendkit.EndedKinds in Go)
-- and that withdraw a waiter (withdraw(); eventkind.Withdraw): a
-- queue policy that drops waiters adds its kind here. The constants
-- copied from Go are pinned by scripts-lua/constants_test.go.
local ENDED = {takeover = true, reclaimed = true, expired = true, cancelled_in_progress = true}
local WITHDRAW_KINDS = {cancelled = true, superseded = true, max_wait = true}
-- The events kept per resource (backendkit.MaxEvents).
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
