-- lost.lua: record that a holder declared its lease lost: a counter and
-- an event.
-- KEYS: see lib.lua.
-- ARGV: 1 lease id, 2 its token, 3 why it was lost (the event's detail)
-- Returns the new count.
slow()
event('lost', ARGV[1], ARGV[2], ARGV[3])
return redis.call('HINCRBY', KEYS[2], 'lost', 1)
