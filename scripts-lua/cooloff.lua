-- cooloff.lua: pause the resource after a provider's rate-limit signal:
-- no new grant until the end (held_back() in lib.lua), and no rate
-- reservation of its rate key (rate.lua reads the same field). A
-- cool-off in force that ends later is kept. signal_at notes when the
-- last signal came.
-- KEYS: see lib.lua.
-- ARGV: 1 how long, ms (at least 1), 2 reason (the event's detail)
-- Returns the end of the cool-off in force, ms (server time).
set('signal_at', now)
local until_ = now + ARGV[1]
if until_ > (get('cooloff') or 0) then
  set('cooloff', until_)
  slow()
  event('cooloff', '', 0, string.format('%s: no new grant for %s ms', ARGV[2], ARGV[1]))
end
return finish(get('cooloff'))
