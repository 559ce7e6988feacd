-- admin.lua: the admin actions (governor.Backend's Withdraw, SetPaused,
-- SetLimit), each recorded as an event naming who acted.
-- KEYS: see lib.lua.
-- ARGV: 1 op, 2 who acts (the event's by), then by op:
--   'withdraw': 3 event kind (one of WITHDRAW_KINDS in lib-slow.lua), 4 detail,
--               5.. waiter ids
--   'pause', 'resume': nothing more
--   'limit': 3 the live limit (0: clear it), 4 when clearing, the limit
--            to put in force at once (the configured one; 0: see below)
-- Returns for 'withdraw' the ids withdrawn, in queue order (withdraw() in
-- lib.lua); for 'pause' and 'resume' 1 when it changed the state, else 0;
-- for 'limit' the limit in force after it.
--
-- paused and live (lib.lua's header) hold grants back (held_back()) and
-- set the limit in force (in_force()); forget.lua keeps a resource that
-- has either. Raising the limit, resuming and withdrawing hand the room
-- on at once, by the hand-off of a release (promote()).
local op, by = ARGV[1], ARGV[2]
load({'limit', 'used', 'qlen', 'minexp', 'drift', 'paused', 'live'})
settle()
slow()
if op == 'withdraw' then
  local ids = {}
  for i = 5, #ARGV do
    ids[#ids + 1] = ARGV[i]
  end
  local out = withdraw(ids, ARGV[3], by, ARGV[4])
  promote()
  return finish(out)
elseif op == 'pause' then
  if (get('paused') or 0) > 0 then
    return finish(0)
  end
  event('paused', '', 0, 'no new grant until resumed', by)
  set('paused', now)
  set('paused_by', by)
  return finish(1)
elseif op == 'resume' then
  if (get('paused') or 0) == 0 then
    return finish(0)
  end
  event('resumed', '', 0, string.format('paused for %d ms', now - get('paused')), by)
  set('paused', false)
  set('paused_by', false)
  promote()
  return finish(1)
elseif op == 'limit' then
  local limit, was = ARGV[3] + 0, get('limit')
  if limit > 0 then
    if was == 0 then
      born() -- the state is born here (lib-loss.lua)
    end
    event('limit', '', 0, string.format('limit set live to %d (was %d)', limit, was), by)
    set('live', limit)
    set('live_at', now)
    set('live_by', by)
    set('limit', limit)
    if get('drift') == limit then
      set('drift', 0)
    end
  elseif (get('live') or 0) > 0 then
    -- Back to the limit given (the configured one), else to the one a
    -- process asked for meanwhile (drift), else the one in force stays
    -- until a process asks for another (in_force()).
    local back = (ARGV[4] or 0) + 0
    if back <= 0 then
      back = get('drift') > 0 and get('drift') or was
    end
    event('limit', '', 0, string.format('live limit cleared; the limit in force is %d (was %d)', back, was), by)
    set('live', false)
    set('live_at', false)
    set('live_by', false)
    set('limit', back)
    set('drift', 0)
  end
  promote()
  return finish(get('limit'))
end
error('governor: admin.lua: unknown op ' .. tostring(op), 0)
