-- rate.lua: GCRA over two dimensions (requests, tokens), the algorithm of
-- governor/internal/gcra. Time is the server's, in microseconds.
-- KEYS: 1 the rate state hash (fields rq, tk: theoretical arrival times;
--       it expires when it no longer matters), 2 the counters hash
--       (allowed, limited, and lim: the limits of the last reservation,
--       "rate period_us burst" of requests then of tokens; kept),
--       3 (reserve only; optional) the state hash of the resource of the
--       same name, whose field cooloff (ms, see cooloff.lua) denies every
--       reservation until it has passed
--       The counters hash also keeps the budget learned from the
--       provider's responses (learn): lrq, ltk the requests and tokens
--       it still accepts, lrq_at, ltk_at until when (us); reserve takes
--       a cost off them, and denies one they do not cover until then.
--       4 (reserve and share; optional) the rate shares hash
--       (capacity.RateLeases: born, learn, waits, ttl in us, granted
--       the local grants counted, and per lease l:<id> "rate want
--       expires burst granted secret" and o:<id> its owner's
--       declaration, JSON); a reservation is held to the rate and burst
--       the shares leave
--       5 (reserve and adjust; optional) the tokens' shares hash, the
--       same for the tokens limit (share and reap: passed as 4, with the
--       tokens limit as ARGV 2-4); an adjustment is charged at the rate
--       they leave (capacity.RateLeases.SettleRate)
--       share: ARGV 2-4 the requests limit, 5 id, 6 secret, 7 ttl us,
--       8 want, 9 held, 10 token, 11 '1' to release, 12 the owner's
--       declaration ('': none), 13 the lease's count of local grants
--       (capacity.RateAsk.Tally), 14 for a lease without a token, the
--       birth of the shares' state its machine witnessed (0: none);
--       returns {1 (0: not the owner), rate,
--       burst, entitled, waiting 0|1, token, expires us, learning's end
--       us (0: none)}
--       reap: ARGV 2 id, 3 its owner's declaration, proven dead by the
--       caller: drops the lease if that is still its owner; returns 1 if
--       it did
-- ARGV: 1 mode ('reserve' | 'adjust' | 'status' | 'learn' | 'share' | 'reap'),
--       2 requests rate, 3 requests period us, 4 requests burst, 5 requests cost,
--       6 tokens rate, 7 tokens period us, 8 tokens burst, 9 tokens cost
--       (adjust: only the tokens arguments count; cost is the delta;
--       10 '1' for a shadow reservation (reserve: see shadow_denied);
--       status: none counts; learn: 2 requests remaining, 3 their reset
--       in us, 6 tokens remaining, 7 their reset in us, a remaining
--       below 0 not reported)
-- Returns reserve: {allowed 0|1, retry after us (-1: cost above burst),
--   remaining requests, remaining tokens} (numbers as strings), and a
--   fifth field, the cool-off's end in ms, when a cool-off denied it;
--   a shadow reservation the limits deny: {1, retry, remaining requests,
--   remaining tokens, '0', '1'} (allowed, and counted in shadow_denied);
--   adjust and learn: 1; status: {allowed, limited, lim or '', remaining requests,
--   remaining tokens (-1: no limit), now us, shadow_denied, learning's
--   end us (0: none), local grants, {id, rate, want, burst, granted,
--   expires us, ... of the live shares}, then the tokens' shares' local
--   grants and list the same way}, read without changes.
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000000 + tonumber(t[2])
local K = KEYS[1]

local function fmt(v)
  return string.format('%.0f', v)
end

local function stored(f)
  return tonumber(redis.call('HGET', K, f) or '0') or 0
end

local function burst(rate, b)
  if b > 0 then
    return b
  end
  return rate
end

-- reserve returns allowed, retry, remaining, new tat (nil: no limit)
local function reserve(f, rate, period, b, cost)
  if rate <= 0 then
    return true, 0, -1, nil
  end
  b = burst(rate, b)
  if cost > b then
    return false, -1, 0, nil
  end
  local emission = period / rate
  local tat = stored(f)
  if tat < now then
    tat = now
  end
  local nxt = tat + emission * cost
  local allow_at = nxt - emission * b
  -- a millionth of a cell of slack, as gcra.Reserve: a whole burst is
  -- allow_at = now exactly, which float rounding may put a hair above
  if allow_at - now > emission * 1e-6 then
    return false, math.ceil(allow_at - now), 0, nil
  end
  -- the cells left, from times relative to now and with a millionth of a
  -- cell of slack (gcra.Reserve does the same)
  return true, 0, math.floor((emission * b - (tat - now) - emission * cost) / emission + 1e-6), nxt
end

-- keep the state only as long as it matters
local function expire(tats)
  local last = now
  for _, v in ipairs(tats) do
    if v > last then
      last = v
    end
  end
  redis.call('PEXPIRE', K, math.ceil((last - now) / 1000) + 1000)
end


-- The rate shares (capacity.RateLeases in Go, the same steps).
local S = KEYS[4]

-- shares reads the shares' state, dropping the leases expired at now
-- (leaving them in the hash when read_only). A lease is {rate, want,
-- expires, secret, burst, granted}.
local function shares(read_only)
  local all = redis.call('HGETALL', S)
  local m, ls, n = {}, {}, 0
  for i = 1, #all, 2 do
    local f, v = all[i], all[i + 1]
    if string.sub(f, 1, 2) == 'l:' then
      local rate, want, exp, bu, gr, sec = string.match(v, '^(%d+) (%d+) (%d+) (%d+) (%d+) (.*)$')
      if not rate then -- written before burst and granted were kept
        rate, want, exp, sec = string.match(v, '^(%d+) (%d+) (%d+) (.*)$')
      end
      if tonumber(exp) <= now then
        if not read_only then
          redis.call('HDEL', S, f, 'o:' .. string.sub(f, 3))
        end
      else
        ls[string.sub(f, 3)] = {tonumber(rate), tonumber(want), tonumber(exp), sec, tonumber(bu or 0), tonumber(gr or 0)}
        n = n + 1
      end
    elseif string.sub(f, 1, 2) ~= 'o:' then
      m[f] = tonumber(v)
    end
  end
  return m, ls, n
end

-- capacity.BurstOf
local function burst_of(rate, limit, b)
  if b <= 0 then
    b = limit
  end
  if limit <= 0 then
    return 0
  end
  return math.floor(rate * b / limit)
end

--[[fair_share]]

if ARGV[1] == 'share' then
  local limit, b = tonumber(ARGV[2]), tonumber(ARGV[4])
  local id, secret, ttl = ARGV[5], ARGV[6], tonumber(ARGV[7])
  local want, held, token = tonumber(ARGV[8]), tonumber(ARGV[9]), tonumber(ARGV[10])
  local m, ls = shares()
  local born = m.born or 0
  local cur = ls[id]
  if cur and cur[4] ~= secret then
    return {0, 0, 0, 0, 0, 0, 0, 0}
  end
  -- capacity.RateAsk.Tally: the grants above the count kept are counted.
  local granted, add = tonumber(ARGV[13]), 0
  if cur then
    add = math.max(0, granted - cur[6])
    granted = math.max(cur[6], granted)
  end
  if add > 0 then
    redis.call('HINCRBY', S, 'granted', add)
  end
  if ARGV[11] == '1' then
    if cur then
      redis.call('HDEL', S, 'l:' .. id, 'o:' .. id)
    end
    return {1, 0, 0, 0, 0, fmt(born), 0, 0}
  end
  -- A lease without a token from a machine that witnessed another
  -- state of the shares (a new process's first refresh after a loss) is
  -- evidence of the loss, as a new acquire's witness is (lib-loss.lua).
  local wit = tonumber(ARGV[14] or '0') or 0
  local reborn = token == 0 and wit > 0 and wit ~= born
  if born == 0 then
    born = now
    redis.call('HSET', S, 'born', fmt(born))
  end
  local lost = token ~= 0 and held > 0 and not cur and token ~= born or reborn
  local learn = m.learn or 0
  if lost and now + ttl > learn then
    learn = now + ttl
    redis.call('HSET', S, 'learn', fmt(learn))
  end
  local learning = now < learn
  local ws, others = {{id, want}}, 0
  for lid, l in pairs(ls) do
    if lid ~= id then
      ws[#ws + 1] = {lid, l[2]}
      others = others + l[1]
    end
  end
  local central = now < (m.waits or 0)
  if central then
    ws[#ws + 1] = {'\0queue', limit}
  end
  local parts = fair_share(limit, ws)
  local e, had = parts[id] or 0, 0
  if cur then
    had = cur[1]
  end
  local free = math.max(0, limit - others - had - (parts['\0queue'] or 0))
  -- capacity.Ask.Next
  local share
  if learning and lost then
    share = math.min(held, had + free)
  elseif e <= had or learning then
    share = math.min(e, had)
  else
    share = math.min(e, had + free)
  end
  -- A cool-off of the resource of the same name (as reserve's) shrinks
  -- the share to 0.
  local c = tonumber(redis.call('HGET', KEYS[3], 'cooloff') or '')
  if c and c * 1000 > now then
    share = 0
  end
  local exp = now + ttl
  local sb = burst_of(share, limit, b)
  redis.call('HSET', S, 'l:' .. id, table.concat({fmt(share), fmt(want), fmt(exp), fmt(sb), fmt(granted), secret}, ' '), 'ttl', fmt(ttl))
  if ARGV[12] ~= '' then
    redis.call('HSET', S, 'o:' .. id, ARGV[12])
  end
  -- The hash is kept, as the counters are: its leases are dropped as
  -- they expire, and born tells a lost state from an expired lease.
  local waiting = central
  for lid, l in pairs(ls) do
    if lid ~= id and (parts[lid] or 0) > l[1] then
      waiting = true
    end
  end
  if not learning then
    learn = 0
  end
  return {1, fmt(share), fmt(sb), fmt(e), waiting and 1 or 0, fmt(born), fmt(exp), fmt(learn)}
end

if ARGV[1] == 'reap' then
  if redis.call('HGET', S, 'o:' .. ARGV[2]) ~= ARGV[3] then
    return 0
  end
  redis.call('HDEL', S, 'l:' .. ARGV[2], 'o:' .. ARGV[2])
  return 1
end

if ARGV[1] == 'status' then
  local c = redis.call('HMGET', KEYS[2], 'allowed', 'limited', 'lim')
  local l = {}
  for v in string.gmatch(c[3] or '', '%d+') do
    l[#l + 1] = tonumber(v)
  end
  local rem = {-1, -1}
  if #l == 6 then
    for i, f in ipairs({'rq', 'tk'}) do
      local ok, _, r = reserve(f, l[3 * i - 2], l[3 * i - 1], l[3 * i], 0)
      if not ok then
        r = 0
      end
      rem[i] = r
    end
  end
  -- The requests' shares (KEYS[4]), then the tokens' (KEYS[5]): each
  -- its count of local grants and its list.
  local learn, out = 0, {}
  for _, h in ipairs({KEYS[4] or false, KEYS[5] or false}) do
    local granted, list = 0, {}
    if h then
      S = h
      local m, ls = shares(true)
      if now < (m.learn or 0) and m.learn > learn then
        learn = m.learn
      end
      granted = m.granted or 0
      for id, l in pairs(ls) do
        for _, v in ipairs({id, fmt(l[1]), fmt(l[2]), fmt(l[5]), fmt(l[6]), fmt(l[3])}) do
          list[#list + 1] = v
        end
      end
    end
    out[#out + 1] = fmt(granted)
    out[#out + 1] = list
  end
  return {c[1] or '0', c[2] or '0', c[3] or '', fmt(rem[1]), fmt(rem[2]), fmt(now),
    redis.call('HGET', KEYS[2], 'shadow_denied') or '0', fmt(learn), out[1], out[2], out[3], out[4]}
end

local a = {}
for i = 2, 9 do
  a[i] = tonumber(ARGV[i])
end

if ARGV[1] == 'learn' then
  for _, d in ipairs({{'lrq', 2, 3}, {'ltk', 6, 7}}) do
    if a[d[2]] >= 0 and a[d[3]] > 0 then
      redis.call('HSET', KEYS[2], d[1], fmt(a[d[2]]), d[1] .. '_at', fmt(now + a[d[3]]))
    end
  end
  return 1
end

if ARGV[1] == 'adjust' then
  local rate, period = a[6], a[7]
  if rate > 0 and KEYS[5] then
    -- capacity.RateLeases.SettleRate
    S = KEYS[5]
    local _, ls = shares()
    local sr = 0
    for _, l in pairs(ls) do
      sr = sr + l[1]
    end
    if sr < rate then
      rate = rate - sr
    end
  end
  if rate > 0 then
    local emission = period / rate
    local tat = stored('tk')
    if tat < now then
      tat = now
    end
    local nxt = tat + emission * a[9]
    if nxt < now then
      nxt = now
    end
    redis.call('HSET', K, 'tk', fmt(nxt))
    expire({nxt, stored('rq')})
  end
  return 1
end

-- A cool-off denies without charging anything.
if KEYS[3] then
  local c = tonumber(redis.call('HGET', KEYS[3], 'cooloff') or '')
  if c and c * 1000 > now then
    redis.call('HINCRBY', KEYS[2], 'limited', 1)
    return {0, fmt(c * 1000 - now), '0', '0', fmt(c)}
  end
end

-- Rate shares hold the reservation to the rate and burst they leave
-- (capacity.RateLeases.Central): the requests' shares (KEYS[4]) the
-- requests limit (a[2..5]), the tokens' (KEYS[5]) the tokens limit
-- (a[6..9]).
local function central(key, i)
  S = key
  local m, ls, n = shares()
  if now < (m.learn or 0) then
    return true, m.learn - now, m, n
  end
  if n == 0 then
    return false, 0, m, n
  end
  local b = a[i + 2]
  if b <= 0 then
    b = a[i]
  end
  local sr, sb = 0, 0
  for _, l in pairs(ls) do
    sr = sr + l[1]
    sb = sb + burst_of(l[1], a[i], b)
  end
  if sr > 0 then
    a[i], a[i + 2] = a[i] - sr, b - sb
    if a[i] <= 0 or a[i + 2] < a[i + 3] then
      return true, math.floor(a[i + 1] * (n + 1) * math.max(a[i + 3], 1) / (a[i] + sr)), m, n
    end
  end
  return false, 0, m, n
end
for _, d in ipairs({{KEYS[4], 2}, {KEYS[5], 6}}) do
  local denied, retry, m, n = false, 0, nil, 0
  if d[1] and a[d[2]] > 0 then
    denied, retry, m, n = central(d[1], d[2])
  end
  if denied then
    if n > 0 then
      redis.call('HSET', S, 'waits', fmt(now + (m.ttl or 0)))
    end
    if ARGV[10] == '1' then
      redis.call('HINCRBY', KEYS[2], 'shadow_denied', 1)
      return {1, fmt(retry), '0', '-1', '0', '1'}
    end
    redis.call('HINCRBY', KEYS[2], 'limited', 1)
    return {0, fmt(retry), '0', '-1'}
  end
end

local ok1, retry1, rem1, tat1 = reserve('rq', a[2], a[3], a[4], a[5])
local ok2, retry2, rem2, tat2 = reserve('tk', a[6], a[7], a[8], a[9])
-- Shadow (ARGV[10] '1'): the limits are evaluated and a denial counted
-- (shadow_denied), never enforced; what they allow is charged, so that
-- the decisions are those the limits would make.
local shadow = ARGV[10] == '1'
local function shadow_denied(retry)
  redis.call('HINCRBY', KEYS[2], 'shadow_denied', 1)
  return {1, fmt(retry), fmt(rem1), fmt(rem2), '0', '1'}
end
if retry1 == -1 or retry2 == -1 then
  if shadow then
    return shadow_denied(-1)
  end
  return {0, '-1', fmt(rem1), fmt(rem2)} -- a cost above a burst: no change
end
-- The learned budget (learn): the stricter of it and the limits decides.
local lb = redis.call('HMGET', KEYS[2], 'lrq', 'lrq_at', 'ltk', 'ltk_at')
local spend = {}
for i, d in ipairs({{'lrq', 1, a[5]}, {'ltk', 3, a[9]}}) do
  local left, at = tonumber(lb[d[2]]), tonumber(lb[d[2] + 1])
  if left and at and at > now then
    local ok, retry, rem = true, 0, left - d[3]
    if rem < 0 then
      ok, retry, rem = false, at - now, 0
    elseif d[3] > 0 then
      spend[#spend + 1] = d[1]
      spend[#spend + 1] = fmt(rem)
    end
    if i == 1 then
      ok1, retry1, rem1 = ok1 and ok, math.max(retry1, retry), math.min(rem1 < 0 and rem or rem1, rem)
    else
      ok2, retry2, rem2 = ok2 and ok, math.max(retry2, retry), math.min(rem2 < 0 and rem or rem2, rem)
    end
  end
end
redis.call('HSET', KEYS[2], 'lim', table.concat({ARGV[2], ARGV[3], ARGV[4], ARGV[6], ARGV[7], ARGV[8]}, ' '))
if ok1 and ok2 then
  local set = {}
  if tat1 then
    set[#set + 1] = 'rq'
    set[#set + 1] = fmt(tat1)
  end
  if tat2 then
    set[#set + 1] = 'tk'
    set[#set + 1] = fmt(tat2)
  end
  if #set > 0 then
    redis.call('HSET', K, unpack(set))
    expire({tat1 or now, tat2 or now})
  end
  if #spend > 0 then
    redis.call('HSET', KEYS[2], unpack(spend))
  end
  redis.call('HINCRBY', KEYS[2], 'allowed', 1)
  return {1, '0', fmt(rem1), fmt(rem2)}
end
local retry = retry1
if retry2 == -1 or (retry1 ~= -1 and retry2 > retry1) then
  retry = retry2
end
if shadow then
  return shadow_denied(retry)
end
redis.call('HINCRBY', KEYS[2], 'limited', 1)
return {0, fmt(retry), fmt(rem1), fmt(rem2)}
