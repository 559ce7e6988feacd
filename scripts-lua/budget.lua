-- budget.lua: a project's spend budgets, reserved before a call and
-- settled after; the twin of governor/filebackend/budgetbook.go. Time is
-- the server's, in milliseconds. Every key shares the project's hash tag:
-- one call checks and charges several budgets atomically, on Cluster too.
-- KEYS: 1 the budgets hash (field: budget name, value: its record, JSON
--       with every number a string), 2 the open reservations hash (field:
--       lease, value: {"x": expiry ms, "c": [[name, amount], ...], "k":
--       the SHA-1 of the reservation's secret}), 3 the
--       open reservations' expiries (sorted set of leases), 4 the events
--       list (JSON records, oldest first, at most ARGV's cap)
-- ARGV: 1 mode ('reserve' | 'settle' | 'extend' | 'admin' | 'read'), 2 events cap,
--   reserve: 3 lease, 4 ttl ms, 5 by, 6 secret, 7 n, then n times 8
--            fields: name, limit, soft, window start ms, window end ms,
--            amount, born ms as the caller saw it (0: never), the
--            budget's definition as the caller has it ('': not stated)
--   settle:  3 lease, 4 by, 5 secret, 6 n, then n times 3 fields: name, actual
--            amount, born ms as seen at reserve (0: unknown); the name ''
--            gives the actual of every budget not named
--   extend:  3 n, then n times 3 fields: lease, secret, expiry ms (of the
--            lease of that id, just renewed)
--   admin:   3 name, 4 op ('limit' | 'reset' | 'pause' | 'resume' |
--            'confirm' | 'define ' followed by the definition), 5 value
--            (the limit of 'limit' and 'define'), 6 by
-- Returns reserve: {verdict ('ok' | 'mismatch' | 'exhausted' | 'paused' |
--   'held' | 'drift' (a definition other than the state's) | 'notowner'), now ms, the refusing budget's name or '', then
--   the record of each charged budget that has one, as {name, JSON}...};
--   settle: {settled 0|1, overrun budget names...}, or 'notowner' (the
--   secret does not prove the open reservation: nothing changed); extend:
--   {1|0 per lease: an open reservation it proves, renewed}; admin: 1; read: {now ms, name, JSON, name, JSON...} of every budget.
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local B, O, X, E = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
local cap = tonumber(ARGV[2])
local mode = ARGV[1]

local function fmt(v)
  return string.format('%.0f', v)
end

local nums = {'limit', 'live', 'soft', 'spent', 'reserved', 'carry', 'start', 'end', 'born', 'overruns', 'open'}

local function decode(v)
  local r = cjson.decode(v)
  for _, f in ipairs(nums) do
    r[f] = tonumber(r[f] or '0') or 0
  end
  return r
end

local function load(name)
  local v = redis.call('HGET', B, name)
  if not v then
    return nil
  end
  return decode(v)
end

local function fresh()
  local r = {live_by = '', paused = '', held = '', soft_noted = '0', full_noted = '0'}
  for _, f in ipairs(nums) do
    r[f] = 0
  end
  r.born = now
  return r
end

local function encode(r)
  local o = {}
  for k, v in pairs(r) do
    if type(v) == 'number' then
      o[k] = fmt(v)
    else
      o[k] = v
    end
  end
  return cjson.encode(o)
end

local cache = {}
local function get(name)
  if cache[name] == nil then
    cache[name] = load(name) or false
  end
  return cache[name] or nil
end

local function put(name, r)
  cache[name] = r
  redis.call('HSET', B, name, encode(r))
end

local function limit(r)
  if r.live_by ~= '' then
    return r.live
  end
  return r.limit
end

local function event(budget, kind, by, lease, detail)
  redis.call('RPUSH', E, cjson.encode({at = fmt(now), budget = budget, kind = kind, by = by, lease = lease, detail = detail}))
  redis.call('LTRIM', E, -cap, -1)
end

local function soft(name, r)
  if r.soft > 0 and r.soft_noted ~= '1' and r.spent + r.reserved >= r.soft then
    r.soft_noted = '1'
    event(name, 'soft', '', '', string.format('spent %s reserved %s of soft %s (limit %s)', fmt(r.spent), fmt(r.reserved),
      fmt(r.soft), fmt(limit(r))))
  end
end

-- count adds amount, counted at instant at, to the window in force, or,
-- when at is past its end, to the next one.
local function count(name, r, amount, at)
  if at >= r['end'] then
    r.carry = r.carry + amount
  else
    r.spent = r.spent + amount
  end
  soft(name, r)
end

-- prune counts every reservation past its expiry as spent at its
-- estimate, in the window its expiry falls in (as a read showed it).
local function prune()
  local gone = redis.call('ZRANGEBYSCORE', X, '-inf', now, 'WITHSCORES')
  for i = 1, #gone, 2 do
    local id, at = gone[i], tonumber(gone[i + 1])
    local v = redis.call('HGET', O, id)
    if v then
      for _, c in ipairs(cjson.decode(v).c) do
        local r = get(c[1])
        if r then
          local a = tonumber(c[2])
          r.reserved = r.reserved - a
          r.open = r.open - 1
          count(c[1], r, a, at)
          event(c[1], 'abandoned', '', id, 'unsettled after its ttl: counted at its estimate ' .. fmt(a))
          put(c[1], r)
        end
      end
      redis.call('HDEL', O, id)
    end
    redis.call('ZREM', X, id)
  end
end

-- proven: secret proves open reservation o (decoded), made with one.
local function proven(o, secret)
  return o.k == nil or o.k == redis.sha1hex(secret)
end

local function hold(name, r, by, lease, lost)
  r.held = 'evidence of lost data (' .. lost .. '); held until the window ends or an operator confirms'
  event(name, 'held', by, lease, lost)
end

local function records(names)
  local out = {}
  for _, n in ipairs(names) do
    local r = get(n)
    if r then
      out[#out + 1] = n
      out[#out + 1] = encode(r)
    end
  end
  return out
end

if mode == 'read' then
  -- The state as it holds now, as the next write would leave it, written
  -- nowhere: reservations past their expiry counted at their estimates
  -- (prune), and a window that has ended shown as the next one begun
  -- with what counted after its end spent and no hold (its bounds are
  -- the caller's to compute: start the old end, end 0).
  local due = {} -- per budget: {counted in the window in force, after its end, reservations}
  local ends = {}
  local gone = redis.call('ZRANGEBYSCORE', X, '-inf', now, 'WITHSCORES')
  for i = 1, #gone, 2 do
    local v = redis.call('HGET', O, gone[i])
    if v then
      for _, c in ipairs(cjson.decode(v).c) do
        local n = c[1]
        if ends[n] == nil then
          local r = load(n)
          ends[n] = r and r['end'] or 0
        end
        local d = due[n] or {0, 0, 0}
        if tonumber(gone[i + 1]) >= ends[n] then
          d[2] = d[2] + tonumber(c[2])
        else
          d[1] = d[1] + tonumber(c[2])
        end
        d[3] = d[3] + 1
        due[n] = d
      end
    end
  end
  local all = redis.call('HGETALL', B)
  local out = {fmt(now)}
  for i = 1, #all, 2 do
    local name, v = all[i], all[i + 1]
    local r = decode(v)
    local d = due[name]
    local now_ended = r['end'] ~= 0 and now >= r['end']
    if d then
      r.reserved, r.open = r.reserved - d[1] - d[2], r.open - d[3]
      r.spent, r.carry = r.spent + d[1], r.carry + d[2]
    end
    if now_ended then
      r.start, r['end'], r.spent, r.carry, r.held = r['end'], 0, r.carry, 0, ''
    end
    if d or now_ended then
      v = encode(r)
    end
    out[#out + 1] = name
    out[#out + 1] = v
  end
  return out
end

if mode == 'admin' then
  local name, op, value, by = ARGV[3], ARGV[4], tonumber(ARGV[5]), ARGV[6]
  local r = load(name)
  if not r then
    r = fresh() -- a budget acted on before any use (its window opens with the next reserve)
  end
  local detail = op
  if op == 'limit' then
    r.live, r.live_by = value, by
    if value == 0 then
      r.live_by = ''
    end
    detail = 'limit ' .. fmt(value)
  elseif op == 'reset' then
    r.spent, r.carry, r.soft_noted, r.full_noted = 0, 0, '0', '0'
  elseif op == 'pause' then
    r.paused = by
  elseif op == 'resume' then
    r.paused = ''
  elseif op == 'confirm' then
    r.held = ''
  elseif string.sub(op, 1, 7) == 'define ' then
    -- An explicit apply: the window in force runs to its end with its
    -- spent; the next follows the definition (reserve's roll).
    -- Its limit replaces an operator's.
    local def = string.sub(op, 8)
    detail = 'define ' .. def .. ' (was ' .. ((r.def or '') ~= '' and r.def or 'not stated') .. '), limit ' .. fmt(value) ..
      ' (was ' .. fmt(limit(r)) .. ')'
    r.def, r.limit, r.defined, r.live, r.live_by = def, value, '1', 0, ''
  end
  put(name, r)
  event(name, 'admin', by, '', detail)
  return 1
end

prune()

if mode == 'extend' then
  -- A reservation named after a lease and proven by its secret lives as
  -- the lease: each renewal of the lease moves its expiry to the
  -- lease's (never earlier). One already past its expiry was counted
  -- above (prune): nothing brings it back.
  local out = {}
  for i = 0, tonumber(ARGV[3]) - 1 do
    local lease, secret, x = ARGV[4 + 3 * i], ARGV[5 + 3 * i], tonumber(ARGV[6 + 3 * i])
    local v = redis.call('HGET', O, lease)
    local o = v and cjson.decode(v)
    out[#out + 1] = 0
    if o and o.k ~= nil and o.k == redis.sha1hex(secret) then
      out[#out] = 1
      if x > tonumber(o.x) then
        o.x = fmt(x)
        redis.call('HSET', O, lease, cjson.encode(o))
        redis.call('ZADD', X, x, lease)
      end
    end
  end
  return out
end

if mode == 'settle' then
  local lease, by, secret, n = ARGV[3], ARGV[4], ARGV[5], tonumber(ARGV[6])
  local actual, born, names = {}, {}, {}
  for i = 0, n - 1 do
    local name = ARGV[7 + 3 * i]
    names[#names + 1] = name
    actual[name] = tonumber(ARGV[8 + 3 * i])
    born[name] = tonumber(ARGV[9 + 3 * i])
  end
  local v = redis.call('HGET', O, lease)
  local open = v and cjson.decode(v)
  if open and not proven(open, secret) then
    return 'notowner'
  end
  if not v then
    for _, name in ipairs(names) do
      local seen = born[name]
      if seen > 0 and name ~= '' then
        local r = get(name)
        local lost
        if not r then
          lost = 'state gone since ' .. fmt(seen)
          r = fresh()
        elseif r.born > seen then
          lost = 'state born ' .. fmt(r.born) .. ' after ' .. fmt(seen)
        end
        if lost then
          hold(name, r, by, lease, lost)
          count(name, r, actual[name], now)
          put(name, r)
        end
      end
    end
    return {0}
  end
  local out = {1}
  for _, c in ipairs(open.c) do
    local r = get(c[1])
    if r then
      local est = tonumber(c[2])
      local a = actual[c[1]] or actual[''] or est
      r.reserved = r.reserved - est
      r.open = r.open - 1
      if a > est then
        r.overruns = r.overruns + 1
        out[#out + 1] = c[1]
        event(c[1], 'overrun', by, lease, 'actual ' .. fmt(a) .. ' above its estimate ' .. fmt(est))
      end
      count(c[1], r, a, now)
      put(c[1], r)
    end
  end
  redis.call('HDEL', O, lease)
  redis.call('ZREM', X, lease)
  return out
end

-- reserve
local lease, ttl, by, secret, n = ARGV[3], tonumber(ARGV[4]), ARGV[5], ARGV[6], tonumber(ARGV[7])
local cs = {}
for i = 0, n - 1 do
  local b = 8 + 8 * i
  cs[#cs + 1] = {name = ARGV[b], limit = tonumber(ARGV[b + 1]), soft = tonumber(ARGV[b + 2]), start = tonumber(ARGV[b + 3]),
    ['end'] = tonumber(ARGV[b + 4]), amount = tonumber(ARGV[b + 5]), born = tonumber(ARGV[b + 6]), def = ARGV[b + 7]}
end
local names = {}
for _, c in ipairs(cs) do
  names[#names + 1] = c.name
  if now < c.start or now >= c['end'] then
    return {'mismatch', fmt(now), ''}
  end
end
local function reply(verdict, refused)
  local out = {verdict, fmt(now), refused}
  for _, v in ipairs(records(names)) do
    out[#out + 1] = v
  end
  return out
end
local retried = redis.call('HGET', O, lease)
if retried then
  if not proven(cjson.decode(retried), secret) then
    return {'notowner', fmt(now), ''}
  end
  return reply('ok', '')
end
-- The definition (unit, window) is the state's: a caller that states
-- another is refused, changing nothing (an operator's define changes it).
for _, c in ipairs(cs) do
  local r = get(c.name)
  if r and c.def ~= '' and (r.def or '') ~= '' and r.def ~= c.def then
    return reply('drift', c.name)
  end
end
for _, c in ipairs(cs) do
  local r = get(c.name)
  local lost
  if not r and c.born > 0 then
    lost = 'state gone since ' .. fmt(c.born)
  elseif r and c.born > 0 and r.born > c.born then
    lost = 'state born ' .. fmt(r.born) .. ' after ' .. fmt(c.born)
  end
  if not r then
    r = fresh()
  end
  -- The caller's window opens once the record's has ended (or it has
  -- none): never before, whatever window the caller computed (another
  -- configuration's, the clock stepped back), and it starts no earlier
  -- than that end (after a define, the first window of the new
  -- definition is cut to it: nothing counted twice).
  if now >= r['end'] then
    r.start, r['end'] = math.max(c.start, r['end']), c['end']
    r.spent, r.carry = r.carry, 0
    r.soft_noted, r.full_noted, r.held = '0', '0', ''
  end
  if lost then
    hold(c.name, r, by, lease, lost)
  end
  -- The limit and soft threshold are the state's, set by the first
  -- reservation: no caller's configuration changes them (an operator's
  -- limit does, BudgetSetLimit).
  if r.defined ~= '1' then
    r.limit, r.soft, r.defined = c.limit, c.soft, '1'
  end
  if (r.def or '') == '' and c.def ~= '' then
    r.def = c.def
  end
  put(c.name, r)
end
for _, c in ipairs(cs) do
  local r = get(c.name)
  local reason
  if r.paused ~= '' then
    reason = 'paused'
  elseif r.held ~= '' then
    reason = 'held'
  elseif r.spent + r.reserved + c.amount > limit(r) then
    reason = 'exhausted'
    if r.full_noted ~= '1' then
      r.full_noted = '1'
      event(c.name, 'exhausted', by, lease, 'estimate ' .. fmt(c.amount) .. ' over spent ' .. fmt(r.spent) .. ' reserved ' ..
        fmt(r.reserved) .. ' limit ' .. fmt(limit(r)))
      put(c.name, r)
    end
  end
  if reason then
    return reply(reason, c.name)
  end
end
local charges = {}
for _, c in ipairs(cs) do
  local r = get(c.name)
  r.reserved = r.reserved + c.amount
  r.open = r.open + 1
  charges[#charges + 1] = {c.name, fmt(c.amount)}
  soft(c.name, r)
  put(c.name, r)
end
local x = now + ttl
redis.call('HSET', O, lease, cjson.encode({x = fmt(x), c = charges, k = redis.sha1hex(secret)}))
redis.call('ZADD', X, x, lease)
return reply('ok', '')
