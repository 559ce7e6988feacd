-- lib-loss.lua: the prelude's third part (after lib-slow.lua): evidence
-- of lost data and the quarantine, the holders recounted.

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
