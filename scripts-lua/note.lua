-- note.lua: record that a process ran a provider's calls without the
-- backend and that the backend is back (eventkind.Degraded).
-- KEYS: see lib.lua.
-- ARGV: 1 the event's detail (who, how long, how many calls)
-- Returns 1.
slow()
event('degraded', '', 0, ARGV[1])
return finish(1)
