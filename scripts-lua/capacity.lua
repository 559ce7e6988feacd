-- capacity.lua: refresh, or release, a capacity lease (governor/capacity,
-- governor.Backend's Acquire with Request.Capacity). A lease's share is
-- a holder of the resource (H, S) of weight held; its want lives in C.
-- KEYS: see lib.lua, then 7 C: the capacity hash, lease id -> "want
--       expiry_ms in_use granted" (one field per live lease; expired ones
--       are dropped here), under the resource's {hash tag}.
-- ARGV: 1 id, 2 secret, 3 limit asked, 4 lease ttl ms, 5 want, 6 in use,
--       7 held (what the lease says it holds), 8 the lease's fencing
--       token (0: none), 9 '1' to release, 10 declaration JSON, 11 how
--       long to hold grants back on detecting lost data, ms (0: never),
--       12 the lease's count of local grants (capacity.Ask's Granted),
--       13 for a lease without a token, the incarnation its machine
--       witnessed (0: none; see witnessed() in lib-loss.lua)
-- Returns {1, share, held, entitled, waiting (0|1), token (0: no holder),
-- expiry ms, limit in force, end of the quarantine ms (0: none), inc};
-- {-2} when the secret does not prove id (nothing changed); {-6, policy}
-- when a queue policy is in force (nothing changed).
local id = ARGV[1]
if not proven(id, ARGV[2]) then
  return {-2}
end

--[[lib]]

local C = KEYS[7]
local limit, ttl, want, inuse, claim, tok0 = ARGV[3] + 0, ARGV[4] + 0, ARGV[5] + 0, ARGV[6] + 0, ARGV[7] + 0, ARGV[8] + 0
loss_ms = ARGV[11] + 0
load({'limit', 'used', 'drift', 'token', 'acquired', 'qlen', 'minexp', 'quarantine', 'paused', 'policy', 'cooloff',
  'adapt', 'live', 'adapt_max', 'inc'}, id)

--[[fair_share]]

-- tally is capacity.Ask.Tally (Go): it adds to the resource's count the
-- local grants the lease's kept count lacks (an expired want keeps
-- none), and returns the count to keep.
local function tally()
  local granted = ARGV[12] + 0
  local exp, last = string.match(redis.call('HGET', C, id) or '', '^%d+ (%d+) %d+ (%d+)$')
  if not last or exp + 0 <= now then
    return granted
  end
  if granted > last + 0 then
    add('local_grants', granted - last)
  end
  return math.max(granted, last + 0)
end

local fresh = m.limit == 0
if ARGV[9] == '1' then
  if fresh then
    redis.call('HDEL', C, id)
    return {1, 0, 0, 0, 0, 0, 0, 0, 0, 0}
  end
  settle()
  tally()
  redis.call('HDEL', C, id)
  local r = record(id)
  if r then
    slow()
    hold(r)
    drop_holder(id, parse_rec(id, r) + 0)
    add('released', 1)
    promote()
  end
  return finish({1, 0, 0, 0, 0, 0, 0, get('limit'), 0, get('inc')})
end
local r = record(id)

-- A lease that had a holder (its token) and finds none in a resource
-- without state, or in a state born after its token, outlived the state
-- it was granted in (as renew.lua).
if not r and tok0 > 0 then
  if fresh then
    quarantine(string.format('capacity lease %s refreshed into a resource without state', id))
  elseif get('inc') > tok0 then
    quarantine(string.format('capacity lease %s (token %d) refreshed into a state born after its grant (incarnation %d)',
      id, tok0, get('inc')))
  end
end
-- A lease without a token from a machine that witnessed another state
-- (a new process's first refresh after a loss) is the evidence a new
-- acquire's is: held back, it gets nothing, and it does not make a new
-- state that the machine would witness in place of the lost one.
if not r and tok0 == 0 and (ARGV[13] or 0) + 0 > 0 then
  witnessed(id, ARGV[13] + 0)
end
if fresh then
  born()
end
settle()
if m.policy then
  return finish({-6, m.policy})
end
if r and not record(id) then
  r = false -- expired: settle dropped it
end
in_force(limit, id, m.used == 0 and get('qlen') == 0)

-- The live wants, this one's renewed; the weight each lease holds.
redis.call('HSET', C, id, string.format('%d %d %d %d', want, now + ttl, inuse, tally()))
if redis.call('PTTL', C) < 2 * ttl then
  redis.call('PEXPIRE', C, 2 * ttl)
end
local all, ws, ids, dead = redis.call('HGETALL', C), {}, {}, {}
for i = 1, #all, 2 do
  local w, exp = string.match(all[i + 1], '^(%d+) (%d+)')
  if w and exp + 0 > now then
    ws[#ws + 1] = {all[i], w + 0}
    ids[#ids + 1] = '#' .. all[i]
  else
    dead[#dead + 1] = all[i]
  end
end
for i = 1, #dead, 1000 do
  redis.call('HDEL', C, unpack(dead, i, math.min(i + 999, #dead)))
end
local held, shares = {}, 0
for i = 1, #ids, 1000 do
  local recs = redis.call('HMGET', S, unpack(ids, i, math.min(i + 999, #ids)))
  for j = 1, math.min(1000, #ids - i + 1) do
    local rec = m[ids[i + j - 1]] -- what this script changed (settle's prunes), else the stored record
    if rec == nil then
      rec = recs[j]
    end
    local w = rec and string.match(rec, REC_NUMS)
    if w then
      held[ws[i + j - 1][1]] = w + 0
      shares = shares + w
    end
  end
end
if get('qlen') > 0 then
  ws[#ws + 1] = {'\0queue', m.limit} -- capacity.Queue
end
local parts = fair_share(m.limit - (get('used') - shares), ws)
local e, cur = parts[id] or 0, held[id] or 0

-- capacity.Ask.Next (Go), the same steps.
local q = get('quarantine') or 0
local back = held_back()
local free = math.max(0, m.limit - get('used'))
local share
if back and q > now and not r and claim > 0 then
  share = math.min(claim, cur + free) -- the learning mode
elseif e <= cur or back or get('qlen') > 0 then
  share = math.min(e, cur)
else
  share = math.min(e, cur + free)
end
local weight = math.max(share, math.min(cur, inuse))

local exp, tok = now + ttl, 0
if weight == 0 and r then
  drop_holder(id, cur)
elseif weight > 0 and r then
  local _, _, t = parse_rec(id, r)
  tok = t + 0
  redis.call('ZADD', H, string.format('%d', exp), id)
  set('#' .. id, (string.gsub(r, '^%d+ %d+ ', string.format('%d %d ', weight, ttl), 1)))
  add('used', weight - cur)
  expires(exp)
elseif weight > 0 then
  tok = grant(id, weight, ttl, ARGV[10])
end
if weight < cur then
  slow()
  promote()
end
held[id] = weight
local waiting = 0
for w, p in pairs(parts) do
  if w ~= id and (held[w] or 0) < p then
    waiting = 1
  end
end
if q <= now then
  q = 0
end
return finish({1, share, weight, e, waiting, tok, exp, m.limit, q, get('inc')})
