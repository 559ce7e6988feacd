-- renew.lua: extend a held lease. Never re-acquires a lease that is gone.
-- With ARGV[4] 't' it marks progress instead (Backend.Touch): it sets the
-- record's "pm" to now and leaves the expiry as it is.
-- KEYS: see lib.lua.
-- ARGV: 1 id, 2 ttl ms (0: the lease's own ttl), 3 secret, 4 't' to mark
--       progress, 5 how long to hold grants back on detecting lost data,
--       ms (0: never; see quarantine() in lib-loss.lua), 6 the lease's fencing
--       token as its holder knows it ('0': unknown): a lease gone from a
--       state born after it (inc, lib.lua) outlived its state
-- Returns {1, expiry ms} when renewed (or marked); when the lease is not
-- held, {0, kind, token, detail, time ms} of the event that ended it (see
-- ended() in lib-slow.lua), or {0} when none is recorded; {0, 'stalled', ...}
-- when its declaration has a progress timeout ("pto", ns) and no mark
-- ("pm", ms; else the grant) came for that long: it stays held, unrenewed;
-- {0, 'cancelled_in_progress', ...} when a newer acquire cancelled it in
-- progress (cancel_holder() in lib-supersede.lua): it stays held, never renewed;
-- {-1} when the secret does not prove id (nothing changed).
local id, ttl = ARGV[1], ARGV[2] + 0
if not proven(id, ARGV[3]) then
  return {-1}
end
-- The meta fields renew reads, with the record, in one HMGET (load()
-- below, or the fast path, which reads them by position), and what the
-- fast path read.
local F = {'qlen', 'minexp'}
local v

--[[fast]]
-- Fast path: held, nobody queued, no holder expired, not cancelled in
-- progress ('"cip":', CIP in lib.lua), and the record's ttl unchanged:
-- the same writes as below, straight. ZADD XX CH counts 0 when
-- the lease is missing from H (its record outlived it) or its expiry did
-- not change: the full path below tells which.
v = redis.call('HMGET', S, F[1], F[2], '#' .. id)
do
  local minexp = tonumber(v[2] or 0)
  if v[3] and tonumber(v[1] or 0) == 0 and minexp and now < minexp and ARGV[4] ~= 't'
      and not string.find(v[3], '"pto":', 1, true) and not string.find(v[3], '"cip":', 1, true) then
    local _, rttl = string.match(v[3], REC_NUMS)
    if rttl and (ttl == 0 or rttl == ARGV[2]) then
      local exp = now + (ttl == 0 and rttl + 0 or ttl)
      if redis.call('ZADD', H, 'XX', 'CH', string.format('%d', exp), id) == 1 then
        if exp < minexp then
          redis.call('HSET', S, 'minexp', string.format('%d', exp))
        end
        return {1, exp}
      end
    end
  end
end

--[[lib]]

loss_ms = (ARGV[5] or 0) + 0
load(F, id, v)
settle()
local r = record(id)
if r and not redis.call('ZSCORE', H, id) then
  -- A record without its entry in H is not a holder (the entry's expiry
  -- is the lease): it goes, and used is counted again without it.
  set('#' .. id, false)
  slow()
  recount(string.format('%d with a record left for lease %s, not a holder', get('used'), id), true)
  r = false
end
if not r then
  local tok = (ARGV[6] or 0) + 0
  if get('limit') == 0 then
    quarantine(string.format('holder %s renewed into a resource without state', id))
  elseif tok > 0 and get('inc') > tok then
    quarantine(string.format('holder %s (token %d) renewed into a state born after its grant (incarnation %d)', id, tok,
      get('inc')))
  end
  slow()
  local kind, tok, detail, at = ended(id)
  if kind then
    return finish({0, kind, tok, detail, at})
  end
  return finish({0})
end
if cancelled(r) then
  -- Cancelled in progress: still held (its work may still run) until
  -- its holder releases it, but never renewed again.
  local _, _, tok = parse_rec(id, r)
  slow()
  local kind, _, detail, at = ended(id)
  return finish({0, 'cancelled_in_progress', tok, kind == 'cancelled_in_progress' and detail or 'cancelled in progress',
    kind == 'cancelled_in_progress' and at or string.match(r, '"cip":(%d+)')})
end
local pto = string.match(r, '"pto":(%d+)')
if pto then
  local _, _, tok, acq = string.match(r, '^(%d+) (%d+) (%d+) (%d+) ')
  local pm = (string.match(r, '"pm":(%d+)') or acq) + 0
  if now >= pm + pto / 1000000 then
    return finish({0, 'stalled', tok,
      string.format('no progress mark for %dms (progress timeout %dms)', now - pm, pto / 1000000), now})
  end
end
if ARGV[4] == 't' then
  local nr, n = string.gsub(r, '"pm":%d+', '"pm":' .. string.format('%d', now), 1)
  if n == 0 then
    if string.sub(r, -2) == '{}' then
      nr = string.sub(r, 1, -2) .. '"pm":' .. string.format('%d', now) .. '}'
    else
      nr = string.sub(r, 1, -2) .. ',"pm":' .. string.format('%d', now) .. '}'
    end
  end
  set('#' .. id, nr)
  return finish({1, redis.call('ZSCORE', H, id) + 0})
end
-- The heartbeat is the expiry minus the record's ttl: rewrite the record
-- only when the ttl changes.
local _, rttl = parse_rec(id, r)
if ttl == 0 then
  ttl = rttl + 0
elseif rttl ~= ARGV[2] then
  set('#' .. id, (string.gsub(r, REC_TTL, '%1' .. ARGV[2], 1)))
end
local exp = now + ttl
redis.call('ZADD', H, 'XX', string.format('%d', exp), id)
expires(exp)
return finish({1, exp})
