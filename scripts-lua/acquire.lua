-- acquire.lua: grant, refuse, queue, or claim a grant handed to a waiter.
-- KEYS: see lib.lua.
-- ARGV: 1 id, 2 limit, 3 weight, 4 ttl ms, 5 mode ('fail'|'wait'),
--       6 queue ttl ms, 7 notification channel, 8 declaration JSON,
--       9 holders to report when not granted, 10 '1' when id is new (never
--       sent before: it cannot be queued or granted yet), 11 secret,
--       12 how long to hold grants back on detecting lost data, ms (0:
--       never; see quarantine() in lib-loss.lua), 13 evidence that the
--       resource had state ('0': none): when id is new (ARGV 10), the
--       incarnation (inc, lib.lua) of the state the caller's machine
--       witnessed last (see witnessed() in lib-loss.lua); otherwise the server time
--       (ms) of the last reply that told the caller id was queued here, 14 the
--       queue policy asked for (governor.Policy.Encode; '' FIFO), 15 the
--       priority class named, 16 the fair key ('' none), 17 the
--       supersede key ('' none), 18 '1' to cancel a holder with it in
--       progress, 19 '1' exclusive: the weight is the limit in force at
--       grant (ARGV 3 is the limit asked for; queued, its record says
--       weight 0: see weight_of() in lib.lua), 20 '1' to cancel in
--       progress a holder of another OS user too (supersede() in lib-supersede.lua).
--       ARGV 12-20 may be cut off from the first of them on that each
--       hold their default ('0' or ''): absent, each is its default (every
--       key and argument costs the server, as a redis.call does).
-- Returns {1, token, expiry ms, fresh, limit, inc} when granted: fresh 1
-- when the resource had no state (new or forgotten), else 0; limit the
-- limit in force at the grant; inc the state's incarnation (0: unknown);
-- otherwise {code, inc, 0,
-- position in the queue, limit, used, queue length, drift, now ms, end
-- of the cool-off ms (0: none; see cooling() in lib.lua), end of the
-- quarantine ms (0: none; see quarantine() in lib-loss.lua), then (id,
-- record, expiry) of up to ARGV[9] holders}, code 0 refused, 2
-- queued, -1 weight above the limit in force; {-2} when the secret does
-- not prove id (nothing changed); {-3, kind, by, detail, time ms} when id,
-- not new, was withdrawn from the queue by someone else (withdrawn() in
-- lib.lua; by a queue policy too: max_wait, superseded): nothing
-- changed; {-4, max_queue} when the policy's queue is full; {-5, holder,
-- its user} when cancel-in-progress would cancel another OS user's
-- holder without ARGV[20] (nothing changed).
local id, limit, weight, ttl = ARGV[1], ARGV[2] + 0, ARGV[3] + 0, ARGV[4] + 0
if not proven(id, ARGV[11]) then
  return {-2}
end
local new = ARGV[10] == '1'
-- The meta fields acquire reads, in one HMGET (load() below), and what
-- the fast path read: the first twelve of them, by position (each field
-- read costs; the fast path reads only those it decides on, and the rest
-- when it does not grant).
local F = {'limit', 'used', 'drift', 'token', 'acquired', 'qlen', 'minexp', 'quarantine', 'paused', 'policy', 'cooloff',
  'adapt', 'live', 'pdrift', 'adapt_max', 'inc'}
local v

--[[fast]]
-- Fast path: a new request, the limit in force is the one asked for (no
-- drift, no adaptive limit other than it: adaptive() in lib-slow.lua), nobody
-- queued, no holder expired, not held back (quarantine, paused, cooling
-- off), the incarnation the one the machine witnessed (if any), and
-- room. The same writes as grant() below, straight.
if new then
  -- '#' .. id too: a request sent again as it was (a client's retry after
  -- a broken connection, the first run's reply lost) finds its grant.
  v = redis.call('HMGET', S, F[1], F[2], F[3], F[4], F[5], F[6], F[7], F[8], F[9], F[10], F[11], F[12], '#' .. id, F[16])
  local held, inc = v[13], v[14]
  local wit = ARGV[13]
  -- used below zero would let too many in: the full path recounts it.
  -- A field that holds no number (tonumber nil) is the full path's to
  -- name (num() in lib.lua).
  -- The limit, qlen, drift and adaptive limit are compared as Go and
  -- lib.lua write them (a string compare costs less than a conversion);
  -- any other spelling takes the full path, which reads it as a number.
  local q, dr, ad = v[6], v[3], v[12]
  local used, minexp, last, n
  if not held and v[1] == ARGV[2] and (not q or q == '0') and (not dr or dr == '0') and not v[8] and not v[9] and not v[10]
      and not v[11] and (not ad or ad == ARGV[2]) and (ARGV[14] or '') == '' and (ARGV[17] or '') == ''
      and (not wit or wit == '0' or wit == inc) then
    used, minexp, last, n = tonumber(v[2] or 0), tonumber(v[7] or 0), tonumber(v[4] or 0), tonumber(v[5] or 0)
  end
  if used and minexp and last and n and used >= 0 and now < minexp and used + weight <= limit then
    local tok = math.max(last + 1, FLOOR)
    local exp = now + ttl
    redis.call('ZADD', H, string.format('%d', exp), id)
    local rec = string.format(REC, weight, ttl, tok, now) .. ARGV[8]
    local acquired = string.format('%d', n + 1)
    if exp < minexp then
      redis.call('HSET', S, 'token', string.format('%d', tok), 'used', string.format('%d', used + weight),
        'acquired', acquired, '#' .. id, rec, 'minexp', string.format('%d', exp))
    else
      redis.call('HSET', S, 'token', string.format('%d', tok), 'used', string.format('%d', used + weight),
        'acquired', acquired, '#' .. id, rec)
    end
    return {1, tok, exp, 0, limit, inc or 0}
  end
  local w = redis.call('HMGET', S, F[13], F[14], F[15])
  v[13], v[14], v[15], v[16] = w[1], w[2], w[3], inc
  -- Granted or queued by an earlier run of this same request: not new
  -- (counted once, claimed below, or left in its place in the queue).
  if held then
    new, v[17] = false, held
  elseif q and q ~= '0' and redis.call('ZSCORE', Q, id) then
    new = false
  end
end

--[[lib]]

local mode, channel, decl = ARGV[5], ARGV[7], ARGV[8]
local sup = ARGV[17] or '' -- the supersede key
local fresh -- 1 when the resource had no state (Go then lists it again)
loss_ms = (ARGV[12] or 0) + 0

-- reply builds the reply above (read by Go's parseReply).
local function reply(code, tok, exp, pos, n)
  if sup ~= '' and (code == 1 or code == 2) then
    superseding(id, sup, code == 1 and 'h' or 'w')
  end
  if code == 1 then
    return finish({1, tok, exp, fresh, get('limit'), get('inc')})
  end
  flush()
  local r = {code, get('inc'), 0, pos or 0, get('limit'), get('used'), get('qlen'), get('drift'), now, get('cooloff') or 0,
    get('quarantine') or 0}
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
local qat = (ARGV[13] or 0) + 0
if qat > 0 and ARGV[10] == '1' then
  witnessed(id, qat)
elseif qat > 0 then
  -- A waiter seen queued at qat, now missing from the queue of a state
  -- born after qat (its incarnation, lib.lua), outlived its state: a
  -- newcomer made the new one.
  -- A tombstone (forget.lua) newer than qat says the state was forgotten
  -- after the waiter left its queue (forget needs none), not lost.
  if fresh == 1 and get('known') <= qat * 1000 + 999 then
    quarantine(string.format('waiter %s re-queued into a resource without state', id))
  elseif get('inc') > qat * 1000 + 999 and not redis.call('ZSCORE', Q, id) then
    quarantine(string.format('waiter %s, queued at %d ms, re-queued into a state born at %d ms', id, qat,
      math.floor(get('inc') / 1000)))
  end
end
if fresh == 1 then
  born()
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
local exclusive = ARGV[19] == '1'
if exclusive then
  weight = m.limit
end
local qweight = exclusive and 0 or weight -- the weight a queue record says

local idle = m.used == 0 and queue_empty

-- The policy in force changes only when the resource is idle, as the
-- limit; a process asking for another one meanwhile is recorded as
-- drift, and served under the one in force.
local want = ARGV[14] or ''
if (m.policy or '') ~= want then
  if idle then
    set('policy', want ~= '' and want or false)
    if m.pdrift then
      set('pdrift', false)
    end
    P = nil
  elseif (m.pdrift or '') ~= want then
    slow()
    event('drift', id, 0, string.format('a process asked for queue policy %q; the policy in force is %q', want, m.policy or ''))
    set('pdrift', want)
  end
elseif idle and m.pdrift then
  set('pdrift', false)
end
local pol = policy()
local cls, key = 1, ''
if pol then
  cls, key = pol_class(ARGV[15] or ''), ARGV[16] or ''
end

-- The rest of acquire under a queue policy (see lib-policy.lua's "Queue
-- policies"): a newcomer is granted at once only when nobody waits and
-- the policy allows it; otherwise it is queued in its class and the
-- queue is served, which grants it if it comes first (in Fail mode it
-- then leaves the queue again, refused, if it was not granted).
local function acquire_policy()
  local queued = not new and not queue_empty and redis.call('ZSCORE', Q, id)
  if not queued then
    if queue_empty and not held_back() and pol_allows(cls, key, weight) then
      pol_as = {cls, key}
      local tok, exp = grant(id, weight, ttl, decl)
      return reply(1, tok, exp)
    end
    if mode ~= 'wait' and queue_empty then
      add('busy', 1)
      return reply(0, 0, 0, 0, ARGV[9] + 0)
    end
    if mode == 'wait' and P.mq > 0 and get('qlen') >= P.mq then
      add('busy', 1)
      return finish({-4, P.mq})
    end
    pol_enqueue(id, cls, key, string.format(WREC, qweight, ttl, now, channel) .. decl)
    promote()
    local r = record(id)
    if r then
      local _, _, tok = parse_rec(id, r)
      return reply(1, tok + 0, now + ttl)
    end
    if mode ~= 'wait' then
      pol_as = {} -- not a max_wait drop
      drop_waiter(id)
      pol_as = nil
      add('busy', 1)
      return reply(0, 0, 0, 0, ARGV[9] + 0)
    end
    add('waited', 1)
  end
  local qexp = now + ARGV[6]
  if P.mw > 0 then
    local enq = string.match(redis.call('HGET', QD, '^' .. id) or '', '^%d+ %d+ (%d+) ')
    qexp = math.min(qexp, (enq or now) + P.mw)
  end
  redis.call('ZADD', QE, qexp, id)
  return reply(2, 0, 0, redis.call('ZRANK', Q, id) + 1, ARGV[9] + 0)
end

if weight > m.limit or pol and pol_never(cls, key, weight) then
  if not new then
    slow()
    drop_waiter(id)
  end
  return reply(-1)
end

-- A request with a supersede key that is not queued yet (granted, it
-- would have been claimed above; withdrawn, it would have been told)
-- replaces the older one with its key.
if sup ~= '' and (new or queue_empty or not redis.call('ZSCORE', Q, id)) then
  local h, user = supersede(id, sup, ARGV[18] == '1', ARGV[20] == '1', decl)
  if h then
    return finish({-5, h, user})
  end
  queue_empty = get('qlen') == 0
end

if pol then
  return acquire_policy()
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
  redis.call('HSET', QD, id, string.format(WREC, qweight, ttl, now, channel) .. decl)
  add('qlen', 1)
  add('waited', 1)
end
redis.call('ZADD', QE, now + ARGV[6], id)
return reply(2, 0, 0, redis.call('ZRANK', Q, id) + 1, ARGV[9] + 0)

