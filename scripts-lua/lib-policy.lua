-- lib-policy.lua: the prelude's fourth part (after lib-loss.lua): queue
-- policies.

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
-- classes with waiters, at most 8, a policy's classes, usually the first),
-- and with fair_cap up to backendkit.PolicySkip HMGETs more in a class
-- whose head's key is at its cap: bounded, whatever the number of
-- waiters and keys.
local BAND, QUANT, SKIP = 562949953421312, 720720, 8 -- QUANT, SKIP: backendkit.PolicyQuant, backendkit.PolicySkip
local EAGER, OVERTAKES = 8, 10 -- backendkit.EagerPasses, governor.DefaultMaxOvertakes
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
  -- (policyrule.Rules.ClassIndex; a name the policy in force lacks, under
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
  -- head was passed backendkit.EagerPasses (8) times already. S field
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
