-- quarantine.lua: hold new grants back on evidence of lost data that
-- the client found outside any script (keys evicted: redisbackend's
-- eviction watch), as quarantine() in lib-loss.lua does on the evidence a
-- script finds; one event, once per quarantine in force.
-- KEYS: see lib.lua.
-- ARGV: 1 how long, ms (at least 1), 2 why (the event's detail starts
--       with it)
-- Returns the end of the quarantine in force, ms (server time).
loss_ms = ARGV[1] + 0
quarantine(ARGV[2])
return finish(get('quarantine'))
