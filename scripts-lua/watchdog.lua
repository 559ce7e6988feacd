-- watchdog.lua: record that a run's watchdog stopped or killed the
-- command tree of a lease (eventkind.WatchdogKill).
-- KEYS: see lib.lua.
-- ARGV: 1 lease id, 2 its token, 3 why, and what it did (the detail)
-- Returns 1.
slow()
event('watchdog_kill', ARGV[1], ARGV[2], ARGV[3])
return finish(1)
